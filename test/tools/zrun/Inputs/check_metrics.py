"""Checks a zrun --metrics-jsonl file against the same run's --trace losses:
check_metrics.py METRICS TRACE STEPS KEY [KEY...] (the keys every line
holds). Prints "ok N lines" or what differs."""
import json
import sys

metrics, trace, steps, keys = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
lines = [json.loads(line) for line in open(metrics)]
losses = {int(l.split()[1]): l.split()[3] for l in open(trace) if l.startswith("step ")}
if [l["step"] for l in lines] != list(range(1, steps + 1)):
    sys.exit(f"steps {[l['step'] for l in lines]}, not 1..{steps}")
for line in lines:
    missing = [k for k in keys if k not in line]
    if missing:
        sys.exit(f"step {line['step']} lacks {missing}: {line}")
    if "%.9g" % line["loss"] != losses[line["step"]]:
        sys.exit(f"step {line['step']}: loss {line['loss']} against the trace's {losses[line['step']]}")
    if line["seconds"] <= 0 or line["step_seconds"] <= 0:
        sys.exit(f"step {line['step']}: times {line}")
print(f"ok {len(lines)} lines")
