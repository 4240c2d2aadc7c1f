"""The memory timeline (zcc.memory/v1): valid against its schema, every
buffer once, the live-bytes peak at the arena when the plan is at its lower
bound, kinds and source locations where the model's code is. Its two other
forms: PyTorch's memory snapshot, read by PyTorch's own helpers, and the HTML
page, drawn by headless Chromium and checked against the JSON."""

import base64
import collections
import html.parser
import json
import os
import pickle
import shutil
import subprocess
import sys

import jsonschema
import pytest
import torch

import zcc

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
import nanogpt  # noqa: E402

with open(os.path.join(ROOT, "docs", "zcc.memory-v1.schema.json")) as f:
    SCHEMA = json.load(f)
with open(os.path.join(ROOT, "docs", "zcc.stats-v1.schema.json")) as f:
    STATS_SCHEMA = json.load(f)


def gpt_plan(**kw):
    torch.manual_seed(0)
    model = nanogpt.GPT(vocab=128, sequence=32, width=64, heads=4, layers=2)
    x, y = (torch.from_numpy(a) for a in nanogpt.batches(1, 4, 32, 128)[0])
    # The training step's timeline alone (no eval or predict entries).
    return zcc.from_torch(model, (x,), (y,), loss=nanogpt.lm_loss,
                          evaluate=False).compile(**kw)


def test_gpt_timeline_is_valid_and_complete():
    compiled = gpt_plan()
    timeline = compiled.memory_timeline()
    jsonschema.validate(timeline, SCHEMA)
    (entry,) = timeline["entries"]
    # Every buffer of the plan once, in order.
    count = int(compiled.report().split(" launches, ")[1].split(" buffers")[0])
    assert [b["id"] for b in entry["buffers"]] == list(range(count))
    # At its lower bound, the plan's peak of live bytes is its arena.
    memory = compiled.memory_analysis()
    assert memory["arena"] == memory["lower_bound"] == entry["arena_bytes"]
    assert entry["peak_live_bytes"] == entry["arena_bytes"]
    assert entry["live_bytes"][entry["peak_launch"]] == entry["peak_live_bytes"]
    assert len(entry["live_bytes"]) == len(entry["launches"])
    # Live arena buffers never share bytes at one launch.
    arena = [b for b in entry["buffers"] if b["region"] == "arena"]
    for i, a in enumerate(arena):
        for b in arena[i + 1:]:
            if a["first_launch"] <= b["last_launch"] and b["first_launch"] <= a["last_launch"]:
                assert (a["offset"] + a["bytes"] <= b["offset"]
                        or b["offset"] + b["bytes"] <= a["offset"]), (a, b)
    kinds = collections.Counter(b["kind"] for b in entry["buffers"])
    for kind in ("activation", "saved_for_backward", "gradient", "workspace",
                 "persistent", "input"):
        assert kinds[kind] > 0, kinds
    phases = [l["phase"] for l in entry["launches"]]
    assert phases[0] == "forward" and "backward" in phases and "update" in phases
    # The forward's first backward launch comes after every forward launch.
    assert phases.index("backward") > max(i for i, p in enumerate(phases)
                                          if p == "forward")
    # Saved activations and gradients point at the model's source lines.
    for b in entry["buffers"]:
        if b["kind"] in ("saved_for_backward", "gradient") and b["op"] != "constant":
            assert "nanogpt.py:" in b["location"], b


def tools_dir():
    """Where zcc and zrun are: ctest names the tools it built; by hand,
    build/bin if it is there."""
    bin_dir = os.environ.get("ZCC_BIN_DIR")
    if bin_dir is None:
        bin_dir = os.path.join(ROOT, "build", "bin")
        if not os.path.exists(os.path.join(bin_dir, "zcc")):
            pytest.skip("zcc and zrun are not built in build/bin "
                        "(set ZCC_BIN_DIR)")
    return bin_dir


def test_zcc_and_zrun_write_the_same_timeline(tmp_path):
    # From the source (zcc) and from the .zplan alone (zrun): the plan file
    # carries what the timeline needs; the same for the page and snapshot.
    bin_dir = tools_dir()
    example = os.path.join(ROOT, "examples", "gpt_block.mlir")
    plan = str(tmp_path / "g.zplan")
    flags = ("--memory-json", "--memory-html", "--memory-torch-snapshot")
    outputs = {}
    for tool in ("zcc", "zrun"):
        files = [str(tmp_path / f"{tool}{i}") for i in range(len(flags))]
        args = [a for pair in zip(flags, files) for a in pair]
        if tool == "zcc":
            command = ["zcc", example, "-o", plan, "--optimizer", "adamw"]
        else:
            command = ["zrun", plan, "--steps", "0"]
        command[0] = os.path.join(bin_dir, tool)
        subprocess.run(command + args, check=True, capture_output=True)
        outputs[tool] = []
        for name in files:
            with open(name, "rb") as f:
                outputs[tool].append(f.read())
    assert outputs["zcc"] == outputs["zrun"]
    left = json.loads(outputs["zcc"][0])
    assert pickle.loads(outputs["zcc"][2])["segments"][0]["total_size"] == \
        left["arena_bytes"]
    jsonschema.validate(left, SCHEMA)
    entry = left["entries"][0]
    assert entry["peak_live_bytes"] == entry["arena_bytes"]
    assert any("gpt_block.mlir:" in l["location"] for l in entry["launches"])


def test_accumulation_gives_each_entry_its_timeline():
    timeline = gpt_plan(accumulate=True).memory_timeline()
    jsonschema.validate(timeline, SCHEMA)
    kinds = [e["kind"] for e in timeline["entries"]]
    assert kinds == ["microbatch", "apply"]
    apply = timeline["entries"][1]
    assert {l["phase"] for l in apply["launches"]} == {"update"}


def test_torch_snapshot_is_the_plan_and_pytorchs_helpers_read_it():
    compiled = gpt_plan()
    (entry,) = compiled.memory_timeline()["entries"]
    raw = compiled.memory_torch_snapshot()
    data = pickle.loads(raw)
    arena, persistent = data["segments"]
    assert arena["total_size"] == entry["arena_bytes"]
    base = arena["address"]

    # Replayed independently: every arena buffer allocated once at its
    # offset and freed once, live blocks never overlap, and the peak of live
    # bytes is the timeline's.
    live, total, peak, allocated = {}, 0, 0, []
    for event in data["device_traces"][0]:
        addr, size = event["addr"], event["size"]
        if event["action"] == "alloc":
            assert base <= addr and addr + size <= base + arena["total_size"]
            for other, other_size in live.items():
                assert addr + size <= other or other + other_size <= addr
            live[addr] = size
            total += size
            peak = max(peak, total)
            allocated.append((addr - base, size))
            frame = event["frames"][0]
            assert frame["line"] >= 0 and frame["name"]
        elif event["action"] == "free_completed":
            assert live.pop(addr) == size
            total -= size
    assert not live
    expected = [(b["offset"], b["bytes"]) for b in entry["buffers"]
                if b["region"] == "arena" and b["first_launch"] >= 0]
    assert sorted(allocated) == sorted(expected)
    assert peak == entry["peak_live_bytes"]
    # Allocations point at the model's lines, as PyTorch's frames do.
    assert any(e["frames"][0]["filename"].endswith("nanogpt.py")
               for e in data["device_traces"][0] if e["action"] == "alloc")
    # The persistent tensors: held blocks, one per tensor, named.
    held = [b for b in persistent["blocks"] if b["state"] == "active_allocated"]
    names = {b["name"] for b in entry["buffers"] if b["region"] == "persistent"}
    assert {b["frames"][0]["name"] for b in held} == names
    assert sum(b["size"] for b in persistent["blocks"]) == persistent["total_size"]

    # PyTorch's own helpers read it: segsum checks its byte accounting.
    from torch.cuda import _memory_viz as viz
    assert "segments: 2" in viz.segsum(data)
    trace = viz.trace(data)
    assert f"{len(data['device_traces'][0])} entries" in trace
    assert "TOTAL MEM: 0" not in trace.splitlines()[0]
    flame = viz.segments(data, format_flamegraph=lambda lines: lines)
    assert "active_allocated" in flame and "wte" in flame
    for page in (viz.trace_plot(data), viz.segment_plot(data)):
        files = json.loads(page.split("const local_files = ")[1].split("\n")[0])
        assert pickle.loads(base64.b64decode(files[0]["base64"])) == data


class Dom(html.parser.HTMLParser):
    """The page as Chromium left it: every element's attributes and text."""

    VOID = {"meta", "input", "br", "img", "link", "hr"}

    def __init__(self, text):
        super().__init__()
        self.elements, self.open = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        node = {"tag": tag, "attrs": dict(attrs), "text": "", "children": []}
        if self.open:
            self.open[-1]["children"].append(node)
        self.elements.append(node)
        if tag not in self.VOID:
            self.open.append(node)

    def handle_endtag(self, tag):
        while self.open:
            if self.open.pop()["tag"] == tag:
                break

    def handle_data(self, data):
        for node in self.open:
            node["text"] += data

    def find(self, tag=None, **attrs):
        return [e for e in self.elements
                if tag in (None, e["tag"])
                and all(e["attrs"].get(k.replace("_", "-")) == v
                        for k, v in attrs.items())]

    def one(self, tag=None, **attrs):
        (found,) = self.find(tag, **attrs)
        return found


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    message = ("Chromium is not installed (scripts/install-deps.sh installs "
               "Debian's chromium package)")
    if os.environ.get("ZCC_REQUIRE_CHROMIUM"):
        pytest.fail(message)
    pytest.skip(message)


def browse(tmp_path, page, fragment="", screenshot=None):
    """Loads the page in headless Chromium; its DOM after the scripts ran."""
    path = tmp_path / "page.html"
    path.write_text(page)
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--hide-scrollbars", "--no-first-run", "--window-size=1400,1000",
               f"--user-data-dir={tmp_path / 'profile'}"]
    command += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    run = subprocess.run(command + [path.as_uri() + fragment],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    return Dom(run.stdout)


def test_memory_page_draws_the_timeline_in_headless_chromium(tmp_path):
    compiled = gpt_plan()
    (entry,) = compiled.memory_timeline()["entries"]
    page = compiled.memory_html()
    assert "http://" not in page.replace("http://www.w3.org/", "")
    assert "https://" not in page

    saved = max((b for b in entry["buffers"] if b["kind"] == "saved_for_backward"),
                key=lambda b: b["bytes"])
    dom = browse(tmp_path, page, f"#buffer={saved['id']}")
    assert dom.one(tag="body")["attrs"].get("data-rendered") == entry["name"]

    # One rectangle per arena buffer, where the JSON puts it.
    svg = dom.one(id="map")
    x0, sx, y0, sy = (float(svg["attrs"][k]) for k in
                      ("data-x0", "data-sx", "data-y0", "data-sy"))
    rects = {int(e["attrs"]["data-id"]): e["attrs"] for e in dom.elements
             if e["tag"] == "rect" and "data-id" in e["attrs"]}
    arena = {b["id"]: b for b in entry["buffers"]
             if b["region"] == "arena" and b["first_launch"] >= 0}
    assert rects.keys() == arena.keys()
    for i, b in arena.items():
        r = rects[i]
        assert r["data-kind"] == b["kind"] and b["kind"] in r["class"]
        assert float(r["x"]) == pytest.approx(x0 + b["first_launch"] * sx)
        assert float(r["width"]) == pytest.approx(
            (b["last_launch"] - b["first_launch"] + 1) * sx)
        assert float(r["y"]) == pytest.approx(y0 - (b["offset"] + b["bytes"]) * sy)
        assert float(r["height"]) == pytest.approx(max(b["bytes"] * sy, 0.5))

    # The live-bytes curve, the lower bound and the peak.
    curve = dom.one(id="live-curve")["attrs"]
    assert int(curve["data-points"]) == len(entry["launches"])
    assert curve["d"].count("H") == len(entry["launches"])
    assert int(dom.one(id="lower-bound")["attrs"]["data-bytes"]) == \
        entry["lower_bound_bytes"]
    peak = dom.one(id="peak")["attrs"]
    assert int(peak["data-launch"]) == entry["peak_launch"]
    assert int(peak["data-bytes"]) == entry["peak_live_bytes"]

    # The largest buffers, in order; every kind present in the legend.
    table = dom.one(id="largest")
    rows = [int(e["attrs"]["data-id"]) for e in table["children"]
            if "data-id" in e["attrs"]]
    biggest = sorted(entry["buffers"], key=lambda b: (-b["bytes"], b["id"]))
    assert rows == [b["id"] for b in biggest[:20]]
    legend = {e["attrs"]["data-kind"] for e in dom.one(id="legend")["children"]
              if "data-kind" in e["attrs"]}
    assert legend == {b["kind"] for b in entry["buffers"]}

    # The picked buffer's details: name, op, source location, size, life.
    picked = dom.one(id="picked")
    assert int(picked["attrs"]["data-id"]) == saved["id"]
    fields = {e["attrs"]["data-field"]: e["text"] for e in dom.elements
              if "data-field" in e["attrs"]}
    assert fields["location"] == "location" + saved["location"]
    assert "nanogpt.py:" in saved["location"]
    assert fields["op"] == "op" + saved["op"]
    assert f"({saved['bytes']})" in fields["bytes"]
    assert f"launches {saved['first_launch']}\u2013{saved['last_launch']}" in \
        fields["lifetime"]
    assert "rect" in [e["tag"] for e in dom.find(data_id=str(saved["id"]))]

    # The screenshot: saved-for-backward and gradient colours are drawn.
    from PIL import Image
    shot = tmp_path / "page.png"
    browse(tmp_path, page, screenshot=shot)
    with Image.open(shot) as image:
        assert image.size == (1400, 1000)
        colours = {colour: n for n, colour in
                   image.convert("RGB").getcolors(maxcolors=1 << 24)}
    assert colours.get((0xe6, 0x55, 0x0d), 0) > 2000, "saved_for_backward not drawn"
    assert colours.get((0x74, 0xc4, 0x76), 0) > 2000, "gradients not drawn"


def test_memory_page_shows_each_entry_of_an_accumulating_plan(tmp_path):
    compiled = gpt_plan(accumulate=True)
    timeline = compiled.memory_timeline()
    names = [e["name"] for e in timeline["entries"]]
    apply = timeline["entries"][1]
    assert apply["kind"] == "apply"
    dom = browse(tmp_path, compiled.memory_html(), "#entry=" + apply["name"])
    assert [e["attrs"]["data-entry"] for e in dom.one(id="tabs")["children"]] == names
    assert dom.one(tag="body")["attrs"]["data-rendered"] == apply["name"]
    drawn = {int(e["attrs"]["data-id"]) for e in dom.elements
             if e["tag"] == "rect" and "data-id" in e["attrs"]}
    assert drawn == {b["id"] for b in apply["buffers"]
                     if b["region"] == "arena" and b["first_launch"] >= 0}
    assert {e["attrs"]["data-phase"] for e in dom.elements
            if "data-phase" in e["attrs"]} == {"update"}


def test_zrun_stats_json_states_capacity_peak_and_runs_per_entry(tmp_path):
    bin_dir = tools_dir()
    example = os.path.join(ROOT, "examples", "gpt_block.mlir")
    plan, memory, stats = (str(tmp_path / n) for n in
                           ("g.zplan", "memory.json", "stats.json"))
    subprocess.run([os.path.join(bin_dir, "zcc"), example, "-o", plan,
                    "--optimizer", "adamw", "--accumulate",
                    "--memory-json", memory], check=True)
    run = subprocess.run([os.path.join(bin_dir, "zrun"), plan, "--steps", "3",
                          "--microbatches", "2", "--stats-json", stats],
                         check=True, capture_output=True, text=True)
    with open(stats) as f:
        s = json.load(f)
    with open(memory) as f:
        timeline = json.load(f)
    jsonschema.validate(s, STATS_SCHEMA)
    assert s["planned_peak_bytes"] == timeline["arena_bytes"]
    assert s["arena_capacity_bytes"] == timeline["arena_bytes"]
    assert s["lower_bound_bytes"] == max(e["lower_bound_bytes"]
                                         for e in timeline["entries"])
    assert s["region_bytes"]["persistent"] == timeline["persistent_bytes"]
    assert s["allocations_at_load"] > 0 and s["allocations_after_load"] == 0
    assert s["runs_by_kind"] == {"train_step": 0, "microbatch": 6, "apply": 3,
                                 "eval": 0, "predict": 0}
    assert [(e["kind"], e["runs"]) for e in s["runs_by_entry"]] == \
        [("microbatch", 6), ("apply", 3)]
    assert s["microbatches_since_apply"] == 0
    assert s["entries_run"] == 9
    assert "entries run" in run.stdout


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    pytest.skip("no MemAvailable in /proc/meminfo")


def test_a_20_gb_arena_fails_at_load_naming_the_bytes(tmp_path):
    # A valid plan whose arena is 20 GB (more where the machine has more
    # available, so that it never fits): zrun stops at load, names each
    # region's bytes and the bytes available, and runs nothing.
    bin_dir = tools_dir()
    target = max(20_000_000_000, mem_available())
    rows = -(-target // (8192 * 4))
    wide = f"tensor<{rows}x8192xf32>"
    source = tmp_path / "big.mlir"
    source.write_text(f"""func.func @big_loss(
    %x: tensor<8192xf32> {{zt.name = "x", zt.role = #zt.role<input>}},
    %w: tensor<8192xf32> {{zt.name = "w", zt.role = #zt.role<parameter>, zt.init = #zt.init<ones>}}) -> tensor<f32> {{
  %xb = zt.broadcast_in_dim %x, dims = [1] : (tensor<8192xf32>) -> {wide}
  %wb = zt.broadcast_in_dim %w, dims = [1] : (tensor<8192xf32>) -> {wide}
  %t = zt.mul %xb, %wb : {wide}
  %u = zt.tanh %t : {wide}
  %loss = zt.sum %u, dims = [0, 1] : ({wide}) -> tensor<f32>
  return %loss : tensor<f32>
}}
""")
    plan, memory = str(tmp_path / "big.zplan"), str(tmp_path / "big.json")
    subprocess.run([os.path.join(bin_dir, "zcc"), str(source), "-o", plan,
                    "--optimizer", "sgd", "--memory-json", memory], check=True)
    with open(memory) as f:
        arena = json.load(f)["arena_bytes"]
    assert arena >= target
    run = subprocess.run([os.path.join(bin_dir, "zrun"), plan, "--steps", "5"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert run.stdout == ""
    message = run.stderr
    assert f"bytes of host memory (arena {arena}," in message, message
    assert "persistent 32768, inputs 32768" in message, message
    assert "bytes available (MemAvailable in /proc/meminfo)" in message, message
    assert "nothing was allocated and no step ran" in message, message
