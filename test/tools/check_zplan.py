#!/usr/bin/env python3
"""An independent checker for zplan modules, sharing no code with the compiler.

Reads the text zt-plan-memory prints and checks, for every entry, that:
  - arena slots whose lifetimes [first, last) overlap never share a byte,
  - every slot is aligned and ends within its region (the arena within the
    entry's arena, the persistent and constant regions within the module's
    sizes), the entry's arena is no larger than the module's,
  - input, output, persistent and constant slots never overlap each other,
  - a persistent name means the same offset and size in every entry,
  - the lower bound is no larger than the arena,
  - a launch that writes a slot it also reads (a result in place over an
    operand) is one of the kernels that read each element before writing
    it (the list below, written here, not taken from the runtime),
  - a broadcast view (a slot read through strides) stays within its slot,
    is read only by element kernels, and is never read by a launch that
    writes its slot.
With --saved NAME it also reports the slot named NAME (loc("NAME") in the
source): its lifetime and how many arena slots live at the same time share
none of its bytes (the arena-reset failure cannot happen).

usage: check_zplan.py FILE|- [--saved NAME]...
Prints one line per entry ("entry @f: ... ok") and exits 1 on any violation.
"""
import re
import sys

SLOT = re.compile(
    r"^\s*(%\S+) = zplan\.slot (\w+) offset = (\d+) size = (\d+)"
    r"(?: live = \[(\d+), (\d+)\])?(?: name = \"([^\"]*)\")?")
ENTRY = re.compile(
    r"zplan\.entry @(\S+) kind = (\w+) arena = (\d+) lower_bound = (\d+) no_reuse = (\d+)")
MODULE_ATTR = re.compile(r"zplan\.(\w+) = (\d+) : i64")
VIEW = re.compile(r"^\s*(%\S+) = zplan\.view (%\S+)")
BROADCAST = re.compile(
    r"^\s*(%\S+) = zplan\.broadcast_view (%\S+) strides = \[([-0-9, ]*)\] : "
    r"memref<([^>]*)> to memref<([^>]*)>")
STRIDED = re.compile(
    r"^\s*(%\S+) = zplan\.strided_view (%\S+) offset = (\d+) strides = "
    r"\[([-0-9, ]*)\] : memref<([^>]*)> to memref<([^>]*)>")
# The kernels that read and write strided views (attention's operands).
VIEWING = {"attention", "attention_grad"}
LAUNCH = re.compile(r'zplan\.launch "(\w+)"\(([^)]*)\) -> \(([^)]*)\)')
# Kernels whose element i is read before element i is written and nothing
# else: elementwise ops, their gradients, a fused program of them, and a few
# more.
ELEMENT = set("""add sub mul div neg exp log tanh sigmoid relu gelu gelu_erf silu
    sqrt rsqrt relu_grad gelu_grad gelu_erf_grad silu_grad tanh_grad
    sigmoid_grad sqrt_grad rsqrt_grad scale fused""".split())
# BatchNorm's kernels take a channel at a time, reading its statistics and
# each of its elements before writing that element.
IN_PLACE = ELEMENT | set("""dropout mse_grad softmax_cross_entropy_grad
    softmax_cross_entropy_fused sgd adamw
    copy batch_norm batch_norm_grad batch_norm_stats_grad""".split())
BYTES = {"f32": 4, "f64": 8, "i32": 4, "i64": 8, "bf16": 2}


def memref(text):
    """'2x16xf32' -> ([2, 16], bytes per element)."""
    *dims, dtype = text.split("x")
    return [int(d) for d in dims], BYTES[dtype]


def overlaps(a_lo, a_hi, b_lo, b_hi):
    return a_lo < b_hi and b_lo < a_hi


def element_runs(offset, shape, strides):
    """The elements a view reaches, as sorted [begin, end) runs: its
    innermost dense block (the steps, smallest first, while each is the
    block so far) is one run per combination of the other indices."""
    dims = sorted((st, n) for n, st in zip(shape, strides) if n > 1)
    block, i = 1, 0
    while i < len(dims) and dims[i][0] == block:
        block *= dims[i][1]
        i += 1
    starts = [offset]
    for step, n in dims[i:]:
        starts = [s + k * step for s in starts for k in range(n)]
        if len(starts) > 1 << 21:
            return None
    return sorted((s, s + block) for s in starts)


def runs_meet(a, b):
    i = j = 0
    while i < len(a) and j < len(b):
        if overlaps(*a[i], *b[j]):
            return True
        if a[i][1] <= b[j][0]:
            i += 1
        else:
            j += 1
    return False


def check_module(text, saved, out):
    errors = []
    attrs = {}
    for line in text.splitlines():
        if line.startswith("module attributes"):
            attrs = {k: int(v) for k, v in MODULE_ATTR.findall(line)}
    align = attrs.get("alignment", 1)
    entries = []
    for line in text.splitlines():
        m = ENTRY.search(line)
        if m:
            entries.append({"name": m.group(1), "arena": int(m.group(3)),
                            "lower": int(m.group(4)), "noreuse": int(m.group(5)),
                            "slots": [], "views": {}, "launches": [],
                            "broadcasts": {}, "strided": {}, "layouts": {}})
            continue
        m = STRIDED.match(line)
        if m and entries:
            strides = [int(v) for v in m.group(4).split(",") if v.strip()]
            shape, size = memref(m.group(6))
            reach = 0 if 0 in shape else int(m.group(3)) + sum(
                (n - 1) * st for n, st in zip(shape, strides)) + 1
            entries[-1]["views"][m.group(1)] = m.group(2)
            entries[-1]["strided"][m.group(1)] = (
                reach * size, len(strides) != len(shape) or min(strides, default=0) < 0)
            entries[-1]["layouts"][m.group(1)] = (int(m.group(3)), shape, strides)
            continue
        m = BROADCAST.match(line)
        if m and entries:
            strides = [int(v) for v in m.group(3).split(",") if v.strip()]
            source, size = memref(m.group(4))
            shape, _ = memref(m.group(5))
            reach = 0 if 0 in shape else sum(
                (n - 1) * st for n, st in zip(shape, strides)) + 1
            count = 1
            for n in source:
                count *= n
            entries[-1]["views"][m.group(1)] = m.group(2)
            entries[-1]["broadcasts"][m.group(1)] = (
                reach * size, len(strides) != len(shape) or min(strides, default=0) < 0,
                count * size)
            continue
        m = VIEW.match(line)
        if m and entries:
            entries[-1]["views"][m.group(1)] = m.group(2)
            continue
        m = LAUNCH.search(line)
        if m and entries:
            entries[-1]["launches"].append(
                (m.group(1), [v.strip() for v in m.group(2).split(",") if v.strip()],
                 [v.strip() for v in m.group(3).split(",") if v.strip()]))
            continue
        m = SLOT.match(line)
        if m and entries:
            entries[-1]["slots"].append({
                "id": m.group(1), "region": m.group(2), "offset": int(m.group(3)),
                "size": int(m.group(4)),
                "live": (int(m.group(5)), int(m.group(6))) if m.group(5) else None,
                "name": m.group(7)})
    if not entries:
        errors.append("no zplan.entry found")
    persistent_names = {}
    for e in entries:
        where = "entry @" + e["name"]
        slots = e["slots"]
        if e["lower"] > e["arena"]:
            errors.append(f"{where}: lower bound {e['lower']} > arena {e['arena']}")
        if e["arena"] > attrs.get("arena_size", e["arena"]):
            errors.append(f"{where}: arena {e['arena']} > module arena {attrs.get('arena_size')}")
        limits = {"arena": e["arena"], "persistent": attrs.get("persistent_size"),
                  "constant": attrs.get("constant_size")}
        for s in slots:
            if s["offset"] % align:
                errors.append(f"{where}: {s['id']} offset {s['offset']} not aligned to {align}")
            limit = limits.get(s["region"])
            if limit is not None and s["offset"] + s["size"] > limit:
                errors.append(f"{where}: {s['id']} ends at {s['offset'] + s['size']}, past the "
                              f"{s['region']} region's {limit} bytes")
            if s["region"] == "persistent" and s["name"]:
                key = (s["offset"], s["size"])
                if persistent_names.setdefault(s["name"], key) != key:
                    errors.append(f"{where}: persistent '{s['name']}' at {key}, elsewhere at "
                                  f"{persistent_names[s['name']]}")
        arena = [s for s in slots if s["region"] == "arena"]
        # Quadratic on purpose: simple enough to trust, and plans here are small.
        for i, a in enumerate(arena):
            for b in arena[i + 1:]:
                if overlaps(*a["live"], *b["live"]) and overlaps(
                        a["offset"], a["offset"] + a["size"], b["offset"], b["offset"] + b["size"]):
                    errors.append(f"{where}: {a['id']} live {a['live']} and {b['id']} live "
                                  f"{b['live']} share bytes")
        def slot_of(v):
            while v in e["views"]:
                v = e["views"][v]
            return v
        size_of = {s["id"]: s["size"] for s in slots}
        for view, (reach, negative, source) in e["broadcasts"].items():
            if negative or reach > source or reach > size_of.get(slot_of(view), 0):
                errors.append(f"{where}: broadcast view {view} reaches {reach} bytes "
                              f"of a {source}-byte source")
        for view, (reach, negative) in e["strided"].items():
            if negative or reach > size_of.get(slot_of(view), 0):
                errors.append(f"{where}: strided view {view} reaches {reach} bytes "
                              f"of a {size_of.get(slot_of(view), 0)}-byte slot")
        for position, (kernel, inputs, outputs) in enumerate(e["launches"]):
            # Outputs of one launch in one slot (attention's gradients written
            # side by side into their concat's) must not share an element.
            for i, a in enumerate(outputs):
                for b in outputs[:i]:
                    if slot_of(a) != slot_of(b):
                        continue
                    la, lb = (e["layouts"].get(v) for v in (a, b))
                    if la is None or lb is None:
                        errors.append(f"{where}: launch {position} ({kernel}) writes "
                                      f"{a} and {b} into one slot, not both through views")
                        continue
                    ra, rb = element_runs(*la), element_runs(*lb)
                    if ra is None or rb is None or runs_meet(ra, rb):
                        errors.append(f"{where}: launch {position} ({kernel}) writes "
                                      f"{a} and {b} over the same elements")
            if kernel not in VIEWING and any(v in e["strided"] for v in inputs + outputs):
                errors.append(f"{where}: launch {position} ({kernel}) reads or writes a "
                              "strided view but is not attention")
            read = {slot_of(v) for v in inputs}
            through = {slot_of(v) for v in inputs if v in e["broadcasts"]}
            if through and kernel not in ELEMENT:
                errors.append(f"{where}: launch {position} ({kernel}) reads a broadcast "
                              "view but is not an element kernel")
            for v in outputs:
                if v in e["broadcasts"] or slot_of(v) in through:
                    errors.append(f"{where}: launch {position} ({kernel}) writes "
                                  f"{slot_of(v)}, which it reads through broadcast strides")
            for v in outputs:
                if slot_of(v) in read and kernel not in IN_PLACE:
                    errors.append(f"{where}: launch {position} ({kernel}) writes {slot_of(v)}, "
                                  "which it reads, and cannot run in place")
        for region in ("input", "output", "persistent", "constant"):
            fixed = [s for s in slots if s["region"] == region]
            for i, a in enumerate(fixed):
                for b in fixed[i + 1:]:
                    if overlaps(a["offset"], a["offset"] + a["size"], b["offset"], b["offset"] + b["size"]):
                        errors.append(f"{where}: {region} slots {a['id']} and {b['id']} overlap")
        for name in saved:
            match = [s for s in arena if s["name"] == name]
            if not match:
                continue
            s = match[0]
            during = [t for t in arena if t is not s and overlaps(*t["live"], *s["live"])]
            sharing = [t for t in during if overlaps(t["offset"], t["offset"] + t["size"],
                                                     s["offset"], s["offset"] + s["size"])]
            print(f"{where}: saved '{name}' live [{s['live'][0]}, {s['live'][1]}) at "
                  f"[{s['offset']}, {s['offset'] + s['size']}); {len(during)} slots live with it, "
                  f"{len(sharing)} share its bytes", file=out)
        print(f"{where}: {len(arena)} arena slots, arena {e['arena']}, lower bound {e['lower']}, "
              f"no reuse {e['noreuse']}: {'ok' if not errors else 'FAILED'}", file=out)
    return errors


def main() -> int:
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    path = args[0]
    saved = [args[i + 1] for i, a in enumerate(args) if a == "--saved" and i + 1 < len(args)]
    text = sys.stdin.read() if path == "-" else open(path).read()
    errors = []
    for module in text.split("// -----"):
        if "zplan.entry" in module:
            errors += check_module(module, saved, sys.stdout)
    for e in errors:
        print("error: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
