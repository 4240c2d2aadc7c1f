# RUN: %zcc-python %s 2>&1 | FileCheck %s -DFILE=%s
# Errors name the user's file and line, the op and the rule.
import zcc


def show(fn, **specs):
    try:
        zcc.trace(fn, **specs)
    except (zcc.Error, TypeError) as error:
        print(type(error).__name__, error)


def matmul_shapes(x):
    w = zcc.param("w", (9, 3))
    return zcc.ops.sum(x @ w)
# CHECK: Error [[FILE]]:[[@LINE-1]]: error: 'zt.matmul' op contraction dimensions differ: lhs has K = 8, rhs has K = 9


show(matmul_shapes, x=zcc.input((4, 8)))


def no_broadcast(x):
    return zcc.ops.sum(x + zcc.param("b", (4,)))
# CHECK: Error [[FILE]]:[[@LINE-1]]: error: add: shapes [4, 8] and [4] do not broadcast


show(no_broadcast, x=zcc.input((4, 8)))


def branch(x):
    if zcc.ops.sum(x):
        return zcc.ops.sum(x)
    return zcc.ops.mean(x)
# CHECK: TypeError [[FILE]]:[[@LINE-3]]: error: bool() needs the value of a traced zcc tensor (shape (), float32), and a trace has none


def compare(x):
    return zcc.ops.sum(x) if zcc.ops.sum(x) > 0 else zcc.ops.mean(x)
# CHECK: TypeError [[FILE]]:[[@LINE-1]]: error: comparing (>) needs the value


show(branch, x=zcc.input((4, 8)))
show(compare, x=zcc.input((4, 8)))


try:
    zcc.input((2,), "float64")
except zcc.Error as error:
    print("Error", error)
# CHECK: Error [[FILE]]:[[@LINE-3]]: error: unsupported dtype 'float64': zcc tensors are float32, int32 or int64
