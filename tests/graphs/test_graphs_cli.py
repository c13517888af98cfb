"""``inproc graphs`` on synthetic records whose token counts are known: the waste by hand, the
GPU-sized list, the outputs, bad input and a damaged cell (all in this process: no engine)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inproc.graphs.padding import list_cost
from inproc.graphs.sweepfile import read_sizes_file
from inproc.record.io import cells_dir
from tests.graphs import synthetic
from tests.spawn import run_main

HAND = {(256, 2): [2, 2, 3, 4, 5], (256, 4): [4, 7, 8, 8, 9]}


@pytest.fixture(scope="module")
def hand(tmp_path_factory) -> Path:
    cells = {k: np.array(v) for k, v in HAND.items()}
    return synthetic.write(tmp_path_factory.mktemp("hand") / "r.json", synthetic.record(cells, (2, 4, 8)))


@pytest.fixture(scope="module")
def gpu_like(tmp_path_factory) -> Path:
    return synthetic.gpu_like(tmp_path_factory.mktemp("gpu") / "gpu.json")


def _json(capfd, *args) -> dict:
    done = run_main(capfd, "graphs", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_waste_of_a_list_by_hand(hand, capfd):
    d = _json(capfd, hand, "--sizes", "3,9", "--budget", "3")
    cap = next(x for x in d["lists"] if x["name"] == "captured")
    # 256x2: 2,2,3→4,4,5→8: 1 + 3; 256x4: 4,7→8,8,8 and 9 above 8 (no graph, no padding): 1.
    assert (cap["padded_tokens"], cap["steps_without_graph"], cap["steps"]) == (5, 1, 10)
    assert [c["lists"]["captured"]["padded_tokens"] for c in d["cells"]] == [4, 1]
    assert {c["status"] for c in d["cells"]} == {"Valid"}
    given = next(x for x in d["lists"] if x["name"] == "--sizes 3,9")
    # 2,2→3, 3, 4→9, 5→9, 4→9, 7→9, 8→9 ×2, 9: 1+1+0+5+4+5+2+1+1+0.
    assert given["padded_tokens"] == 20 and given["unused"] == []
    assert d["captured"] == [2, 4, 8] and d["budget"] == 3
    # Three sizes among the ten counts pad 8 at best: 3,5,9 (2,2→3; 4,4→5; 7→9, 8,8→9) or 2,5,9 (3→5, ...).
    assert d["curve"][2]["padded_tokens"] == 8 and d["suggested"]["sizes"] in ([2, 5, 9], [3, 5, 9])
    sizes = ",".join(map(str, d["suggested"]["sizes"]))
    assert d["suggested"]["set"] == [f"compilation-config.cudagraph_capture_sizes=[{sizes}]",
                                     "compilation-config.max_cudagraph_capture_size=9"]
    assert d["padding_check"] == {"checked": 10, "agree": 10, "first_miss": ""}


def test_the_gpu_sized_record_prints_the_captured_waste_and_a_shorter_list(gpu_like, capfd):
    sizes = synthetic.shipped_sizes()
    assert len(sizes) == 55 and sizes[-1] == 768
    done = run_main(capfd, "graphs", gpu_like)
    assert done.returncode == 0, done.stderr
    rng = np.random.default_rng(3)  # the counts gpu_like made, again
    counts = np.concatenate([synthetic.spec_counts(rng, c, 5, 120) for c in (1, 2, 4, 8, 16, 32, 64, 128)])
    truth = list_cost(counts, np.zeros(counts.size), sizes)
    assert f"captured   1,2,4,6,8,12,16,24,32,40,48,56,… (55 sizes)   768      {truth.waste_tokens:,}" in done.stdout
    assert "Captured: 55 sizes up to 768" in done.stdout and "k = 5" in done.stdout
    line = next(x for x in done.stdout.splitlines() if x.startswith("A shorter list pads no more than the captured 55"))
    shorter = tuple(int(s) for s in line.split(" sizes, ")[1].split(" (")[0].split(","))
    assert len(shorter) < 55 and list_cost(counts, np.zeros(counts.size), shorter).waste_tokens <= truth.waste_tokens
    # The counts seen are not C × (1 + k): most steps scheduled fewer.
    assert np.mean(counts < np.repeat([6 * c for c in (1, 2, 4, 8, 16, 32, 64, 128)], 120)) > 0.5
    assert "Capture cost (recorded at build): 3,072 MiB of device memory, 41.0 s for 55 sizes" in done.stdout


def test_html_markdown_and_the_sizes_file(hand, tmp_path, capfd):
    page, md, sizes = tmp_path / "g.html", tmp_path / "g.md", tmp_path / "sizes.json"
    assert run_main(capfd, "graphs", hand, "--format", "html", "-o", page, "--sweep-file", sizes).returncode == 0
    html = page.read_text()
    assert "<svg" in html and "Waste against the number of sizes" in html and "://" not in html
    assert run_main(capfd, "graphs", hand, "--format", "md", "-o", md).returncode == 0
    assert "## Per cell" in md.read_text() and "| 256x4 | Valid | 5 |" in md.read_text()
    engine, lists = read_sizes_file(sizes)
    assert engine == "vllm" and [(n.name, n.sizes) for n in lists][0] == ("captured", (2, 4, 8))
    # At most as many sizes as the run captured (3), padding the least: 8 tokens.
    assert lists[-1].name == "suggested" and len(lists[-1].sizes) == 3 and lists[-1].sizes[-1] == 9


def test_time_weight_defines_its_own_waste(hand, capfd):
    d = _json(capfd, hand, "--weight", "time", "--budget", "2")
    # Every synthetic step takes 9 ms; the captured list pads 5 tokens.
    assert d["weight"] == "time" and d["lists"][0]["waste_weighted"] == pytest.approx(5 * 0.009)


@pytest.mark.parametrize("args, named", [
    (["--sizes", ""], "an empty size"), (["--sizes", "1,x"], "'x'"), (["--sizes", "0,4"], "'0'"),
    (["--sizes", "8,4"], "4 follows 8"), (["--budget", "0"], "--budget 0"), (["--max-size", "-3"], "--max-size -3")])
def test_bad_flags_are_one_line_and_exit_2(hand, capfd, args, named):
    done = run_main(capfd, "graphs", hand, *args)
    assert done.returncode == 2 and named in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_file_with_no_decode_steps_is_one_line(tmp_path, capfd):
    rec = synthetic.record({}, (2, 4))
    path = synthetic.write(tmp_path / "empty.json", rec)
    done = run_main(capfd, "graphs", path)
    assert done.returncode == 2 and f"{path} has no decode steps to read" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_a_damaged_cell_is_named_and_the_rest_analysed(tmp_path, capfd):
    cells = {k: np.array(v) for k, v in HAND.items()}
    path = synthetic.write(tmp_path / "r.json", synthetic.record(cells, (2, 4, 8)))
    (cells_dir(path) / "decode-256x4.json.gz").write_bytes(b"garbage")
    done = run_main(capfd, "graphs", path, "--format", "json")
    assert done.returncode == 0 and "graphs: not read: decode-256x4" in done.stderr
    d = json.loads(done.stdout)
    assert [c["cell"] for c in d["cells"]] == ["256x2"] and d["lists"][0]["padded_tokens"] == 4
    assert d["not_read"][0].startswith("decode-256x4: ")


def test_the_reports_cuda_graphs_section(gpu_like, hand, tmp_path, capfd):
    md = run_main(capfd, "report", gpu_like)
    assert md.returncode == 0 and "## CUDA graphs" in md.stdout
    section = md.stdout.split("## CUDA graphs")[1].split("\n## ")[0]
    assert "Captured: 55 sizes up to 768" in section and "A shorter list pads no more than the captured 55" in section
    page = tmp_path / "r.html"
    assert run_main(capfd, "report", gpu_like, "--format", "html", "-o", page).returncode == 0
    html = page.read_text()
    assert "<h2>CUDA graphs</h2>" in html and "Waste against the number of sizes" in html
    # A run that captured nothing has no section unless a list is given.
    fixture = synthetic.TEMPLATE
    assert "## CUDA graphs" not in run_main(capfd, "report", fixture).stdout
    given = run_main(capfd, "report", hand, "--sizes", "3,9")
    assert "| --sizes 3,9 | 3,9 | 9 | 20 |" in given.stdout
    bad = run_main(capfd, "report", hand, "--sizes", "3,3")
    assert bad.returncode == 2 and "3 follows 3" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_several_files_are_costed_together(hand, gpu_like, capfd):
    d = _json(capfd, hand, gpu_like, "--budget", "4")
    assert [c["cell"] for c in d["cells"]][:2] == ["r.json: 256x2", "r.json: 256x4"]
    assert d["cells"][2]["cell"] == "gpu.json: 8192x1" and len(d["cells"]) == 10
    assert d["notes"] == [f"{gpu_like} captured {','.join(map(str, synthetic.shipped_sizes()))}, not 2,4,8: "
                          "the captured list is the first file's"]
