"""`sq capacity --over-time W` (sq.capacity_over_time): one capacity search per window of a replayed
trace. Checked on a small trace whose rate steps up: started empty, each window's answer is the
plain capacity search of that window's traffic, and the figures over windows follow from the
answers; warm-started (the default), a window after a busy one sees its backlog."""
from __future__ import annotations

import math

import pytest

import sq
from sq.study.over_time import DRAIN, capacity_over_time
from sq.cli.main import main
from sq.errors import SqError

PROGRAM = """let c = 1;
let window_from = 0;
let window_to = inf;
stage s : fifo(c);
run {{ horizon 300; }}
workload {{ arrive replay window(window_from, window_to); trace "{trace}"; }}
session {{ set t0 = now; turn; run s (new / 1000); observe rt = now - t0; }}
"""


@pytest.fixture
def program(tmp_path):
    # 100 s at 1 request/s, 100 s at 4/s, 100 s at 2/s; each request 900 tokens: 0.9 s of service
    times = [i for i in range(100)] + [100 + i / 4 for i in range(400)] + [200 + i / 2 for i in range(200)]
    trace = tmp_path / "t.csv"
    trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n"
                     + "".join(f"{t},900,1\n" for t in times))
    path = tmp_path / "p.sq"
    path.write_text(PROGRAM.format(trace=trace))
    return path


def test_each_window_is_its_own_search(program):
    ot = capacity_over_time(program, "c", "rt.max<=1", window=100, seeds=[1, 2], tol=0.1, lead_in=0)
    assert ot.starts == (0.0, 100.0, 200.0)
    # a window's traffic is deterministic: 1/s needs 1 server, 4/s needs 4, 2/s needs 2
    assert ot.values.tolist() == [1, 4, 2]
    # started empty, the last window's requests wait for nothing at 2 servers
    assert {r["c"]: r for r in ot.results[-1].records}[2]["rt.max"] == pytest.approx(0.9)
    for t0, result in list(zip(ot.starts, ot.results))[1:2]:     # the busiest, searched alone
        alone = sq.capacity(sq.compile(program, sets={"window_from": t0, "window_to": t0 + 100}), "c",
                            "rt.max<=1", seeds=[1, 2], tol=0.1, direction="min", horizon=100 * DRAIN, warmup=0,
                            settle=1)
        assert (result.value, result.bracket) == (alone.value, alone.bracket)
    f = ot.figures()
    assert (f["peak"], f["mean"]) == (4, 7 / 3)
    assert math.isclose(f["hours"], 7 * 100 / 3600) and math.isclose(f["peak_hours"], 12 * 100 / 3600)


def test_a_window_entered_busy_sees_its_backlog(program):
    # the last window (2/s) follows 4/s: on fewer than 4 servers the lead-in's 3.6 of load leaves
    # a queue that the window's requests wait behind, so it needs the busy window's 4, not 2
    ot = capacity_over_time(program, "c", "rt.max<=1", window=100, seeds=[1, 2], tol=0.1)
    assert ot.values.tolist() == [1, 4, 4]
    # the lead-in is replayed, not measured: at 4 servers the runs observe the window's 200
    # requests and the lead-in's last 3 (arrived 0.25 s apart, each served 0.9 s: in service when
    # the window starts), not the lead-in's other 397; at 2 servers the window's requests wait
    # behind the lead-in's queue (rt.max 80.9 s), where started empty 2 servers meet the SLO
    last = {r["c"]: r for r in ot.results[-1].records}
    assert last[4]["rt.count"] == 203 and last[4]["arrivals_measured"] == 200
    assert last[2]["rt.max"] > 80


@pytest.mark.slow
def test_cli(program, capsys):
    assert main(["capacity", str(program), "--knob", "c", "--slo", "rt.max<=1", "--over-time", "100",
                 "--seeds", "1..2", "--tol", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "peak 4  p95" in out and "deployment-hours" in out


def test_needs_a_windowed_replay(tmp_path, program):
    plain = tmp_path / "plain.sq"
    plain.write_text("let c = 1;\nstage s : fifo(c);\nrun { horizon 10; }\nworkload { arrive poisson(1); }\n"
                     "session { run s (1); observe rt = 1; }\n")
    with pytest.raises(SqError, match="needs a program that replays a trace"):
        capacity_over_time(plain, "c", "rt.max<=1", window=10)
    fixed = tmp_path / "fixed.sq"
    fixed.write_text(program.read_text().replace("window(window_from, window_to)", ""))
    with pytest.raises(SqError, match="write `arrive replay window"):
        capacity_over_time(fixed, "c", "rt.max<=1", window=10)
    with pytest.raises(SqError, match="a positive number of seconds"):
        capacity_over_time(program, "c", "rt.max<=1", window=0)
    with pytest.raises(SqError, match="a lead-in is a number of seconds >= 0"):
        capacity_over_time(program, "c", "rt.max<=1", window=10, lead_in=-1)
