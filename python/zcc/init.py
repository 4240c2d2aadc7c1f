"""Parameter initializers: counter-based draws keyed by the session's seed
and the parameter's name, so initial weights are reproducible bit for bit."""

from ._zcc import Init


def zeros():
    return Init.zeros()


def ones():
    return Init.ones()


def constant(value):
    return Init.constant(float(value))


def normal(mean=0.0, std=1.0):
    return Init.normal(float(mean), float(std))


def uniform(low, high):
    return Init.uniform(float(low), float(high))


def given():
    """The value comes at load: a checkpoint (session.load) or
    session.write. A step before that is an error, never a step on zeros.
    zcc.param(name, shape, init=array) uses it and writes `array` into
    every session it makes."""
    return Init.given()
