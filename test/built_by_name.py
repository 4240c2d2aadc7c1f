"""The zt ops built by their kernel's rule (the ZT_BuiltByName trait) in
ZTOps.td's text: defined with the trait, or by a class that has it
(ZT_ConvOp). Shared by the coverage checks, which leave these ops to the
tests made from their kernel cases."""
import re


def built_by_name(td):
    ops = set(re.findall(r'^def ZT_\w+Op : ZT_Op<"(\w+)",[^{]*ZT_BuiltByName',
                         td, re.M))
    for cls in re.findall(r'^class (ZT_\w+)<[^{]*ZT_BuiltByName', td, re.M):
        ops |= set(re.findall(r'^def ZT_\w+Op : ' + cls + r'<"(\w+)"', td,
                              re.M))
    return ops
