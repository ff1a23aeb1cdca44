"""Test-wide hypothesis profile: reproducible (derandomized, no example database) and
free of wall-clock deadlines, which a 2-core CI machine cannot honour. Fuzzing with
exploration is ``kvoffload conform --max-examples N --seed S`` (and later ``fuzz``)."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "kvoffload-tests",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("kvoffload-tests")
