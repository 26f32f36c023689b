"""sq.read_trace: the public trace formats, recognised and read into columns, and their errors.

Each format is checked on a small file written here against values worked out by hand (or by
Python's own datetime/json on the same text); the shipped Azure 2023 files against an
independent parse with the standard library.
"""
from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

import sq
from sq.errors import SqError
from sq.traces import read_trace
from sq.traces._scan import ScanError, scan

ROOT = Path(__file__).resolve().parents[2]
AZURE = ROOT / "examples" / "replay" / "azure-2023"


def _write(path: Path, text: str, gz: bool = False) -> str:
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return str(path)


def test_azure_2024_mixed_fractions_and_zone(tmp_path):
    path = _write(tmp_path / "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                  "2024-05-10 00:00:00.009930+00:00,1000,20\n"
                  "2024-05-10 00:00:01+00:00,7,1\n"
                  "2024-05-10 00:01:00.5+00:00,30,4\r\n"
                  "\n"
                  "2024-05-11 00:00:00.009930+00:00,5,6\n")
    r = read_trace(path)
    assert r.format == "azure" and len(r) == 4
    assert r.arrival.tolist() == [0.0, 1 - 0.00993, 60.5 - 0.00993, 86400.0]
    assert r.new.tolist() == [1000, 7, 30, 5] and r.out.tolist() == [20, 1, 4, 6]
    assert r.session.tolist() == [0, 1, 2, 3] and r.turn.tolist() == [0, 0, 0, 0]
    assert r.hash_ids is None


def test_azure_2025_num_images_and_gzip(tmp_path):
    text = ("TIMESTAMP,ContextTokens,GeneratedTokens,NumImages\n"
            "2025-01-01T00:00:00.25,10,2,1\n2025-01-01T00:00:02.75,11,3,0\n")
    r = read_trace(_write(tmp_path / "a.csv.gz", text, gz=True))
    assert r.format == "azure" and r.arrival.tolist() == [0.0, 2.5] and r.new.tolist() == [10, 11]


def test_burstgpt_v1_and_v2_sessions(tmp_path):
    v1 = read_trace(_write(tmp_path / "b1.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                           "5,ChatGPT,472,18,490,Conversation log\n8.5,GPT-4,1087,0,1087,API log\n"))
    assert v1.format == "burstgpt" and v1.arrival.tolist() == [0.0, 3.5] and v1.out.tolist() == [18, 0]
    assert v1.session.tolist() == [0, 1]
    # v2: columns located by name, in another order; sessions link turns
    v2 = read_trace(_write(tmp_path / "b2.csv",
                           "Session ID,Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Elapsed time\n"
                           "s9,10,ChatGPT,100,10,110,Conversation log,1.5\n"
                           "s3,11,ChatGPT,200,20,220,Conversation log,1\n"
                           "s9,15,ChatGPT,300,30,330,Conversation log,2\n"
                           "s9,12,ChatGPT,400,40,440,Conversation log,2\n"))
    assert v2.session.tolist() == [0, 1, 0, 0] and v2.turn.tolist() == [0, 0, 2, 1]
    corpus = v2.corpus()
    assert corpus.count.tolist() == [3, 1] and corpus.arrival.tolist() == [0.0, 1.0]
    # turns in turn order; think = the gap to the next turn's arrival, 0 after the last
    assert corpus.turns.tolist() == [[100, 10, 2, 0], [400, 40, 3, 0], [300, 30, 0, 0], [200, 20, 0, 0]]


def test_vidur(tmp_path):
    r = read_trace(_write(tmp_path / "v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens,num_total\n"
                          "0.5,10,3,13\n0.75,1e3,2.0,1002\n"))
    assert r.format == "vidur" and r.arrival.tolist() == [0.0, 0.25] and r.new.tolist() == [10, 1000]


def test_one_turn_corpus_equals_the_sessions_layout_without_offsets(tmp_path):
    """A trace without sessions makes a corpus of one-turn sessions: no offsets or counts (16 B a
    request less), and the same turns, arrivals and blocks as the layout of sessions of any length."""
    rows = [{"timestamp": t, "input_length": n, "output_length": n % 7 + 1, "hash_ids": list(range(n % 4))}
            for t, n in ((5, 10), (2, 20), (5, 30), (0, 40), (2, 50), (9, 60))]     # out of order, ties
    for text in ("".join(json.dumps(x) + "\n" for x in rows),
                 "".join(json.dumps(x) + "\n" for x in sorted(rows, key=lambda x: x["timestamp"]))):
        r = read_trace(_write(tmp_path / "m.jsonl", text))
        one, general = r.corpus(), r._session_corpus()
        assert one.offset is None and one.count is None and len(one) == len(general) == 6
        assert general.offset.tolist() == list(range(6)) and general.count.tolist() == [1] * 6
        assert np.array_equal(one.turns, general.turns) and np.array_equal(one.arrival, general.arrival)
        assert np.array_equal(one.blocks, general.blocks) and np.array_equal(one.block_offset, general.block_offset)
        assert one.sessions() == general.sessions()
    # by arrival, file order among equals
    assert [s[0][0] for s in one.sessions()] == [40, 20, 50, 10, 30, 60]


def test_a_corpus_is_read_once_until_its_file_changes(tmp_path):
    """The runs of a study replay one trace: the corpus is read once a process, again when the file
    changes, and its arrays cannot be written (the runs share them)."""
    from sq.traces import corpus
    path = _write(tmp_path / "v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,10,3\n0.75,20,2\n")
    first = corpus(path)
    assert corpus(path) is first and not first.turns.flags.writeable
    _write(tmp_path / "v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,10,3\n0.75,20,2\n1,30,1\n")
    again = corpus(path)
    assert again is not first and again.turns[:, 0].tolist() == [10, 20, 30]
    other = _write(tmp_path / "w.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,7,1\n")
    assert corpus(other).turns[:, 0].tolist() == [7] and corpus(path) is not again     # one entry


def test_mooncake_blocks_and_millisecond_times(tmp_path):
    rows = [{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [0, 1]},
            {"timestamp": 1500, "input_length": 700, "output_length": 7, "hash_ids": [0, 2]},
            {"timestamp": 2001, "input_length": 3, "output_length": 1, "hash_ids": []}]
    r = read_trace(_write(tmp_path / "m.jsonl", "".join(json.dumps(x) + "\n" for x in rows)))
    assert r.format == "mooncake" and r.block == 512
    assert r.arrival.tolist() == [0.0, 1.5, 2.001]
    assert [r.blocks_of(i).tolist() for i in range(3)] == [[0, 1], [0, 2], []]
    assert r.hash_offsets.tolist() == [0, 2, 4, 4]


def test_bailian_parent_chains(tmp_path):
    rows = [{"chat_id": 159, "parent_chat_id": -1, "timestamp": 61.114, "input_length": 521, "output_length": 132,
             "type": "text", "turn": 1, "hash_ids": [1, 2]},
            {"chat_id": 160, "parent_chat_id": -1, "timestamp": 62.0, "input_length": 10, "output_length": 1,
             "type": "text", "turn": 1, "hash_ids": [3]},
            {"chat_id": 170, "parent_chat_id": 159, "timestamp": 70.5, "input_length": 800, "output_length": 40,
             "type": "text", "turn": 2, "hash_ids": [1, 2, 4]},
            {"chat_id": 171, "parent_chat_id": 170, "timestamp": 90.0, "input_length": 900, "output_length": 9,
             "type": "image", "turn": 3, "hash_ids": [1, 2, 4, 5]}]
    r = read_trace(_write(tmp_path / "q.jsonl", "".join(json.dumps(x) + "\n" for x in rows)))
    assert r.format == "bailian" and r.block == 16
    assert r.session.tolist() == [0, 1, 0, 0] and r.turn.tolist() == [1, 1, 2, 3]
    c = r.corpus()
    assert c.count.tolist() == [3, 1]
    assert c.turns[:, 2].tolist() == [70.5 - 61.114, 90.0 - 70.5, 0.0, 0.0]


def test_vllm_results_and_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    rows = [{"request_id": "bench-0", "input_toks": 2358, "output_toks": 531, "arrival_time": 1787267980.0827403},
            {"request_id": "bench-1", "input_toks": 1034, "output_toks": 769, "arrival_time": 1787267980.3478317}]
    path = _write(tmp_path / "requests.jsonl", "".join(json.dumps(x) + "\n" for x in rows))
    r = read_trace(path)
    assert r.format == "vllm" and r.arrival[1] == 1787267980.3478317 - 1787267980.0827403
    frame = sq.read_trace(path, pandas=True)
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["arrival", "new", "out", "session", "turn"]
    assert frame["new"].tolist() == [2358, 1034]


def test_serq_format_is_read_as_pyserq_reads_it(tmp_path):
    path = _write(tmp_path / "t.csv", "session,turn,new,out,think\n7,0,100,10,1.5\n7,1,20,5,2\n9,0,300,30,0\n")
    r = read_trace(path)
    assert r.format == "serq" and r.arrival is None
    assert r.new.tolist() == [100, 20, 300] and r.session.tolist() == [0, 0, 1] and r.turn.tolist() == [0, 1, 0]
    with pytest.raises(SqError, match="expected 5 or 6 fields, got 2"):
        read_trace(_write(tmp_path / "bad.csv", "1,2\n"))


def test_azure_files_match_an_independent_parse():
    """The shipped Azure 2023 files: every arrival equals the standard library's reading of the
    timestamp, to the 7th decimal (Decimal arithmetic), and the token columns equal."""
    for name in ("AzureLLMInferenceTrace_conv.csv", "AzureLLMInferenceTrace_code.csv"):
        path = AZURE / name
        r = read_trace(path)
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(r) == len(rows)

        def seconds(s):
            day, frac = s.split(".")
            whole = dt.datetime.fromisoformat(day).replace(tzinfo=dt.timezone.utc).timestamp()
            return Decimal(int(whole)) + Decimal("0." + frac)
        t = [seconds(row["TIMESTAMP"]) for row in rows]
        want = np.array([float(x - t[0]) for x in t])
        # whole seconds and the fraction are kept apart, so their difference is within a few ulps
        assert np.abs(r.arrival - want).max() <= 4 * np.spacing(want.max())
        assert r.new.tolist() == [float(row["ContextTokens"]) for row in rows]
        assert r.out.tolist() == [float(row["GeneratedTokens"]) for row in rows]


def _times(text: str):
    """The scanner's (seconds since 1970, fraction) columns of a file of times, one a line."""
    sec, frac = scan(io.BytesIO(text.encode()), "t")[0]
    return sec.tolist(), frac.tolist()


def test_times_that_share_a_minute_read_as_each_alone():
    # the scanner keeps the last date, hour and minute it read: a time in that minute reads its
    # seconds alone; another separator, a zone, a fraction or a second out of range still count
    lines = ["2024-05-10 23:59:58.5+00:00", "2024-05-10 23:59:59+00:00", "2024-05-10T23:59:59+00:00",
             "2024-05-10T23:59:60-01:30", "2024-05-10T23:59:07.125Z", "2024-05-11 00:00:00Z",
             "2024-05-10 23:59:07.25+02:00", "2024-05-10 23:59:07", "2024-05-10 23:58:07"]
    alone = [_times(line + "\n") for line in lines]
    assert _times("".join(line + "\n" for line in lines)) == ([a[0][0] for a in alone], [a[1][0] for a in alone])
    assert alone[5] == ([1715385600], [0.0]) and alone[3] == ([1715385600 + 5400], [0.0])
    for bad in ("2024-05-10 23:59:61", "2024-05-10 23:59:5", "2024-05-10 23:59-59"):
        with pytest.raises(ScanError):
            _times(lines[0] + "\n" + bad + "\n")


@pytest.mark.parametrize("text, line, col, what", [
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n2023-11-16 18:15:4x,1,2\n",
     3, 1, "column 1: expected a date and time"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,4a4\n", 2, "4a4", "column 3: expected a number"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374\n", 2, 27, "expected 3 fields, found 2"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,1,9\n", 2, 29, "expected 3 fields, found more"),
    ('{"timestamp": 0, "input_length": 1, "output_length": 2}\n{"timestamp": 5, "input_length": 1}\n',
     2, 1, "missing key `output_length`"),
    ('{"timestamp": 0, "input_length": 1, "output_length": 2}\n{"timestamp": 5, "input_length": x, '
     '"output_length": 2}\n', 2, "x", "`input_length`: expected a number"),
    ('{"timestamp": 0, "input_length": 1, "output_length": 2, "hash_ids": [1]}\n'
     '{"timestamp": 0, "input_length": 1, "output_length": 2, "hash_ids": [1.5]}\n', 2, "1.5",
     "`hash_ids`: expected an array of whole numbers"),
])
def test_bad_traces_name_line_and_column(tmp_path, text, line, col, what):
    path = _write(tmp_path / "bad.txt", text)
    if isinstance(col, str):                       # the column of that text in the line
        col = text.split("\n")[line - 1].index(col) + 1
    with pytest.raises(SqError) as info:
        read_trace(path)
    e = info.value
    assert (e.file, e.line, e.col) == (path, line, col)
    assert what in e.message
    rendered = e.render()
    assert rendered.startswith(f"{path}:{line}:{col}: error: trace {path}: ")
    assert "\nhelp: " in rendered and "^" in rendered


def test_bad_trace_from_the_cli_exits_2(tmp_path, capsys):
    from sq.cli.main import main
    trace = _write(tmp_path / "bad.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16,1,2\n")
    prog = tmp_path / "p.sq"
    prog.write_text(f'stage d : delay;\nrun {{ horizon 10; }}\nworkload {{ arrive replay; trace "{trace}"; }}\nsession {{ run d (1); }}\n')
    assert main(["run", str(prog)]) == 2
    err = capsys.readouterr().err
    assert f"{trace}:2:1: error:" in err and "help:" in err and "Traceback" not in err


def test_unknown_format_name(tmp_path):
    path = _write(tmp_path / "t.csv", "session,turn,new,out,think\n1,0,1,1,0\n")
    with pytest.raises(SqError, match="unknown trace format `csv`"):
        read_trace(path, format="csv")
    with pytest.raises(SqError, match="no column `TIMESTAMP`"):
        read_trace(path, format="azure")


def test_chunks_join_exactly(tmp_path, monkeypatch):
    """A file longer than the scanner's chunk reads the same as one chunk: lines cut at a chunk's
    end are joined, and line numbers in errors count across chunks."""
    import sq.traces._scan as scan_module
    rows = "".join(f"2023-11-16 18:{m:02d}:{s:02d}.{m * 7 + s:07d},{m * 60 + s},{s}\n"
                   for m in range(60) for s in range(60))
    path = _write(tmp_path / "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n" + rows)
    whole = read_trace(path)
    monkeypatch.setattr(scan_module, "CHUNK", 97)
    small = read_trace(path)
    assert len(whole) == 3600 and np.array_equal(whole.arrival, small.arrival)
    assert np.array_equal(whole.new, small.new) and np.array_equal(whole.out, small.out)
    bad = _write(tmp_path / "b.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n" + rows + "2023-11-16 19:00:00,1,z\n")
    for chunk in (1 << 22, 5000, 97):    # one chunk; chunks whose lines are counted 16 bytes at a time; short ones
        monkeypatch.setattr(scan_module, "CHUNK", chunk)
        with pytest.raises(SqError) as info:
            read_trace(bad)
        assert (info.value.line, info.value.col) == (3602, 23)
