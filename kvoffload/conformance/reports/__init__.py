"""What a target's author reads: the failure, the result and the runnable reproduction."""
