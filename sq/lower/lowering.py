"""IR (version 10, the dict form) → flat arrays the engine runs.

Expressions become postfix bytecode (int32 opcodes with inline operands, a
float64 constant pool); each statement block is inlined into one linear
statement code with jumps. Stage, observe and gauge tables are small numpy
arrays. Nothing here knows about time: the engine (`sq._engine`) reads
these arrays and nothing else.

The opcodes, operand offsets and table columns are those of
`sq/lower/_bytecode.pxd` (one definition, which the engine cimports);
`disassemble` prints code back as one named instruction per line.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sq._support.deep import run_deep
from sq.errors import SqError
from sq._support.number_format import display
from sq._support.settings import open_arrivals
from sq.ir import PREFIX_ATTRS

# The bytecode and its tables are defined once, in sq/lower/_bytecode.pxd, which the engine cimports.
from sq.lower._bytecode import (
    X_NUM, X_ATTR, X_CTX, X_NEG, X_NOT, X_TRUTH, X_ADD, X_SUB, X_MUL, X_DIV, X_POW,
    X_LT, X_LE, X_GT, X_GE, X_EQ, X_NE, X_AND, X_OR, X_JZ, X_JMP, X_FN1, X_MIN, X_MAX,
    X_STAGE, X_POOL, X_PRICE, X_SAMPLE, X_RET, XONE_ARG, XONE_LEN, XBare, XOne, XRef, XPrice, XSample,
    CTX_NOW, CTX_WAITED, CTX_SIZE, CTX_AGE, CTX_LAST, CTX_QUEUED, CTX_PRESENT, CTX_NTOK, CTX_NDEC,
    CTX_NPRE, CTX_NRES, CTX_KVB, CTX_KVP, CTX_ATTN, CTX_DECODING, CTX_ADMISSION, CTX_REMAINING,
    CTX_KVM, Fn1, StageFn, PoolFn,
    S_SET, S_OBSERVE, S_TURN, S_END, S_JUMP, S_BRANCH, S_CHOOSE, S_RUN, S_RET, S_HOLD, S_HOLD_END,
    S_RELEASE, S_DROP, S_GROW, S_LOAD, SB_ELSE, SJ_TARGET, REF_LEN, SPOOL_AMOUNT_LEN,
    H_NPOOLS, H_CACHE, H_LEASE_POOL, H_LEASE_TIME, H_REUSE, H_HEAD_LEN, HP_REF, HP_UNITS,
    HP_RESERVE, HP_LEN, STEP_EXPRS_DTYPE, STEP_SERVE_DTYPE, SPILL_DTYPE, REF_BASE,
    REF_COUNT, REF_INDEX, ExprOp, StmtOp, SBare, SValue, SJump, SBranch, SChoose, SRun, SHold, SPool,
    K_FIFO, K_PS, K_DELAY, K_STEP, M_PLAIN, M_PREFILL, M_DECODE,
    A_NONE, A_POISSON, A_RENEWAL, A_BATCH, A_CLOSED, A_REPLAY, A_POISSON_NOW, A_MODULATED, A_RENEWAL_RATE,
)
from sq.lower._bytecode import DIST_CODES, dist_arity

# the IR's names of functions and context variables → their codes in the bytecode
FN1 = {"Abs": Fn1.FN_ABS, "Floor": Fn1.FN_FLOOR, "Ceil": Fn1.FN_CEIL, "Sqrt": Fn1.FN_SQRT,
       "Exp": Fn1.FN_EXP, "Ln": Fn1.FN_LN, "Sin": Fn1.FN_SIN, "Cos": Fn1.FN_COS}
STAGE_FN = {"Queue": StageFn.SF_QUEUE, "Busy": StageFn.SF_BUSY, "Work": StageFn.SF_WORK,
            "EstLambda": StageFn.SF_EST_LAMBDA, "EstRho": StageFn.SF_EST_RHO,
            "EstWait": StageFn.SF_EST_WAIT, "BudgetLeft": StageFn.SF_BUDGET_LEFT}
POOL_FN = {"Used": PoolFn.PF_USED, "Free": PoolFn.PF_FREE, "Holders": PoolFn.PF_HOLDERS,
           "Queued": PoolFn.PF_QUEUED, "CachedIn": PoolFn.PF_CACHED_IN}
CTX = {"Now": CTX_NOW, "Waited": CTX_WAITED, "Size": CTX_SIZE,
       "Age": CTX_AGE, "Last": CTX_LAST, "Queued": CTX_QUEUED,
       "N": CTX_PRESENT, "Ntok": CTX_NTOK, "Ndec": CTX_NDEC,
       "Npre": CTX_NPRE, "Nres": CTX_NRES, "Kvb": CTX_KVB,
       "Kvp": CTX_KVP, "Attn": CTX_ATTN, "Decoding": CTX_DECODING,
       "Admission": CTX_ADMISSION, "Remaining": CTX_REMAINING, "Kvm": CTX_KVM}
BINARY = {"Add": X_ADD, "Sub": X_SUB, "Mul": X_MUL, "Div": X_DIV, "Pow": X_POW,
          "Lt": X_LT, "Le": X_LE, "Gt": X_GT, "Ge": X_GE, "Eq": X_EQ, "Ne": X_NE}


@dataclass
class Lowered:
    """What the engine runs: flat code and tables, plus names for the report."""

    code: np.ndarray            # int32 expression bytecode
    consts: np.ndarray          # float64 constant pool
    stmts: np.ndarray           # int32 statement code
    init_pc: int                # -1: no init block
    turn_pc: int                # -1: no turn block
    session_pc: int
    n_attrs: int
    slot_serial: int
    slot_turn: int
    slot_cached: int
    slot_computed: int
    stack_depth: int            # the deepest chain of nested evaluations (budget_left) fits
    stage_needs: np.ndarray     # int64 per stage: the stack a call of budget_left(it) needs above the call
    max_keys: int
    observe_names: list[str]
    gauge_names: list[str]
    gauge_exprs: np.ndarray     # int32 expression offsets
    stage_names: list[str]
    stage_indices: list        # int or None per stage row
    stage_kinds: np.ndarray     # int32 K_*
    stage_servers: np.ndarray   # int32 (fifo c)
    stage_phi: np.ndarray       # int32 expression offset of ps φ (-1 otherwise)
    step_exprs: np.ndarray      # STEP_EXPRS_DTYPE a stage: budget, chunk, cost expression entries (step stages)
    stage_shared: np.ndarray    # float64 capacity of a shared stage (0: not shared; its jobs are flows)
    share_maxmin: bool          # `share maxmin` (else bottleneck)
    max_flow_stages: int
    step_serve: np.ndarray      # STEP_SERVE_DTYPE a stage: exclusive prefill?, serve-key start and count
    step_memory: np.ndarray     # int32 pool row of a step stage's `memory` (-1: none)
    serve_keys: np.ndarray      # int32 expression offsets of `serve by` keys
    pool_names: list[str]
    pool_indices: list
    pool_caps: np.ndarray       # float64
    pool_blocks: np.ndarray     # float64, 0: no block
    pool_key_start: np.ndarray  # int32 offset into pool_keys of a pool's `queue by` keys
    pool_key_count: np.ndarray  # int32, 0: fifo
    pool_keys: np.ndarray       # int32 expression offsets
    pool_admit_via: np.ndarray  # int32 stage row that admits a pool's queue (-1: settle admits)
    pool_evict_start: np.ndarray  # int32 offset into pool_keys of `evict by` keys
    pool_evict_count: np.ndarray  # int32, 0: lru
    pool_spill: np.ndarray      # SPILL_DTYPE per pool: tier pool, link stage, work expr, when expr (-1: none)
    holds: np.ndarray           # int32: per hold the H_* head, then (base, count, index, units, reserve) per pool
    hold_offsets: np.ndarray    # int32 offset of each hold in `holds`
    hold_pcs: np.ndarray        # int32 statement address of each hold (a preempted hold re-executes from it)
    pool_lifo: np.ndarray       # int32 1: `preempt lifo`
    max_hold_depth: int         # deepest nesting of holds
    max_hold_pools: int         # most pools one hold names
    arrival_kind: int
    arrival_rate: float         # poisson λ
    arrival_count: int          # batch / closed n
    arrival_gap: int            # renewal gap expression offset
    open_arrivals: bool         # arrivals an arrival limit can end (sq._support.settings.open_arrivals)
    horizon: float
    warmup: float
    seed: int
    arrivals: int               # 0: no arrival limit
    sites: list[str] = field(default_factory=list)  # text of run-time error sites (branch guards, pools)
    # the IR statement each `run` instruction comes from: {pc: ("statement", block, position)},
    # the item (sq.ir.Places) a run-time error about that `run` is placed at
    run_items: dict = field(default_factory=dict)
    trace: str | None = None    # the trace file, read when the run starts
    trace_ordered: bool = False
    replay: dict | None = None  # arrive replay's settings (sq.ir.REPLAY_KEYS), read when the run starts
    rate: dict | None = None    # a poisson rate that reads `now`: its IR, bounded when the run starts
                                # (sq/traces/rate.py)
    rate_expr: int = -1         # a renewal's `rate(r)`: its expression offset, integrated when the run starts
    modulated: tuple | None = None   # a modulated poisson's (rates, leaving rates), float64 arrays
    prefix_cap: float = -1.0    # `trace "F" prefix(C)`: C blocks shared by content id (-1: none)
    slot_prefix: tuple = (-1, -1)   # the attributes it sets: hit_blocks, prompt_blocks
    slot_trace: tuple = (3, 4, 5, 7, 6)   # new, out, think, forced, more
    # Which sums of `kvb`/`kvp` a step stage makes: those of its Budget moment only if an expression
    # other than a cost reads them, those of its iteration if any expression does.
    kv_budget: bool = True
    kv_iteration: bool = True
    # whether an expression other than a cost reads a Budget moment's totals at all (residents,
    # decoders, kvb, kvp): if none does, the moment does not make them (a cost reads the iteration's)
    budget_totals: bool = True
    estimates: bool = True      # some expression reads a stage's estimators (est_*, price)


def lower(ir: dict) -> Lowered:
    """Turn the IR v10 dict into a `Lowered`; SqError for a malformed IR or what this engine cannot run yet.

    Every index the engine will follow (attribute slots, observe ids, stage and
    pool references, block numbers) is checked here, so the engine can trust
    the arrays it gets.
    """
    try:
        return run_deep(lambda: _Lowering(ir).build())   # folded aggregates nest thousands deep
    except SqError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError, OverflowError) as e:
        raise SqError(f"malformed IR: {type(e).__name__}: {e}", phase="validate") from None


def _num(v) -> float:
    return float(v)  # the IR spells non-finite numbers "inf", "-inf", "NaN"


class _Lowering:
    def __init__(self, ir: dict):
        self.ir = ir
        self.code: list[int] = []
        self.consts: list[float] = []
        self.const_index: dict = {}
        self.stmts: list[int] = []
        self.sites: list[str] = []
        self.run_items: dict = {}
        self.at: tuple | None = None    # the IR statement being lowered (its item)
        self.depth = 0
        self.max_depth = 1
        self.expr_depth = 0
        self.calls: list = []
        self.frames: dict[int, tuple[int, list]] = {}   # expression offset -> own depth, budget_left calls
        self.max_keys = 1
        self.attrs = ir.get("attrs", [])
        self.n_observes = len(ir.get("observes", []))
        self.open_blocks: set[int] = set()
        self.contexts_read: set[str] = set()   # context variables read by any expression but a cost
        self.cost_contexts: set[str] = set()   # ... by step stages' cost expressions
        self.estimates = False                  # est_lambda, est_rho, est_wait or price is read
        self.holds: list[int] = []
        self.max_flow_stages = 1
        self.hold_pcs: list[int] = []
        self.hold_offsets: list[int] = []
        self.hold_depth = 0
        self.max_depth_holds = 1
        self.max_hold_pools = 1
        self.stages = ir.get("stages", [])
        self.pools = ir.get("pools", [])

    # -- tables --------------------------------------------------------------
    # One method a table, called in the order below: each compiles its expressions as it goes,
    # and the expression code is laid out in that order.
    def build(self) -> Lowered:
        self.check_header()
        fields = {**self.stage_table(), **self.step_tables(), **self.arrival(), **self.blocks(),
                  **self.pool_tables(), **self.gauges()}
        return Lowered(**fields, **self.slots(), **self.code_and_depths(fields["step_exprs"]),
                       **self.pool_settings(), **self.hold_tables(), **self.run_settings(), **self.names())

    def check_header(self) -> None:
        ir = self.ir
        if ir.get("version") != 10:
            raise SqError(f"IR version {ir.get('version')} is not 10", phase="validate")
        if ir.get("trace") is not None and not isinstance(ir.get("trace"), str):
            raise SqError("malformed IR: the trace is a file name", phase="validate")
        share = ir.get("share")
        if share not in (None, "MaxMin", "Bottleneck"):
            raise SqError(f"malformed IR: share {share!r}", phase="validate")
        self.shared = self.shared_stages()

    def stage_table(self) -> dict:
        """Each stage's kind, servers (fifo c) and ps φ expression."""
        kinds, servers, phis = [], [], []
        for st in self.stages:
            kind = st["kind"]
            if kind == "Delay":
                kinds.append(K_DELAY); servers.append(0); phis.append(-1)
            elif "Fifo" in kind:
                kinds.append(K_FIFO); servers.append(min(int(kind["Fifo"]), 2**31 - 1)); phis.append(-1)
            elif "Ps" in kind:
                kinds.append(K_PS); servers.append(0); phis.append(self.expr(kind["Ps"]))
            elif "Step" in kind:
                kinds.append(K_STEP); servers.append(0); phis.append(-1)
            else:
                raise SqError(f"malformed IR: stage kind {kind}", phase="validate")
        return {"stage_kinds": np.array(kinds, dtype=np.int32), "stage_servers": np.array(servers, dtype=np.int32),
                "stage_phi": np.array(phis, dtype=np.int32),
                "stage_shared": np.array(self.shared, dtype=np.float64),
                "share_maxmin": self.ir.get("share") == "MaxMin"}

    def step_tables(self) -> dict:
        """A step stage's budget, chunk and cost, how it serves, and its memory pool."""
        step_exprs, step_serve, step_memory, serve_keys = [], [], [], []
        for st in self.stages:
            step = st["kind"].get("Step") if isinstance(st["kind"], dict) else None
            if step is None:
                step_exprs.append(_record(STEP_EXPRS_DTYPE, budget=-1, chunk=-1, cost=-1))
                step_serve.append(_record(STEP_SERVE_DTYPE, exclusive=0, key_start=0, key_count=0))
                step_memory.append(-1)
                continue
            budget, chunk = self.expr(step["budget"]), self.expr(step["chunk"])
            step_exprs.append(_record(STEP_EXPRS_DTYPE, budget=budget, chunk=chunk,
                                      cost=self.cost_expr(step["cost"])))
            serve = step["serve"]
            keys = [] if serve == "ExclusivePrefill" else serve["By"]
            step_serve.append(_record(STEP_SERVE_DTYPE, exclusive=int(serve == "ExclusivePrefill"),
                                      key_start=len(serve_keys), key_count=len(keys)))
            serve_keys += [self.expr(k) for k in keys]
            self.max_keys = max(self.max_keys, len(keys))
            memory = step.get("memory")
            if memory is not None and not (isinstance(memory, int) and 0 <= memory < len(self.pools)):
                raise SqError(f"malformed IR: memory pool {memory}", phase="validate")
            step_memory.append(-1 if memory is None else memory)
        return {"step_exprs": np.array(step_exprs, dtype=STEP_EXPRS_DTYPE),
                "step_serve": np.array(step_serve, dtype=STEP_SERVE_DTYPE),
                "step_memory": np.array(step_memory, dtype=np.int32),
                "serve_keys": np.array(serve_keys, dtype=np.int32)}

    def arrival(self) -> dict:
        """The workload's arrival process: its kind, and the rate, count or gap expression it takes."""
        arrival = self.ir.get("arrival")
        a_kind, rate, count, gap = A_NONE, 0.0, 0, -1
        if isinstance(arrival, dict):
            (name, arg), = arrival.items()
            if name == "Poisson":
                a_kind, rate = A_POISSON, _num(arg)
                if not (rate >= 0 and math.isfinite(rate)):
                    raise SqError(f"poisson rate {display(rate)} is not a finite rate >= 0",
                                  phase="validate", item=("arrival",))
            elif name == "Renewal":
                a_kind, gap = A_RENEWAL, self.expr(arg)
            elif name == "PoissonNow":
                return {"arrival_kind": A_POISSON_NOW, "arrival_rate": 0.0, "arrival_count": 0,
                        "arrival_gap": self.expr(arg), "open_arrivals": True, "rate": arg}
            elif name == "RenewalRate":
                return {"arrival_kind": A_RENEWAL_RATE, "arrival_rate": 0.0, "arrival_count": 0,
                        "arrival_gap": self.expr(arg["gap"]), "open_arrivals": True,
                        "rate_expr": self.expr(arg["rate"])}
            elif name == "Modulated":
                return {"arrival_kind": A_MODULATED, "arrival_rate": 0.0, "arrival_count": 0, "arrival_gap": -1,
                        "open_arrivals": True,
                        "modulated": tuple(np.array([_num(x) for x in arg[k]], dtype=np.float64)
                                           for k in ("rates", "leave"))}
            elif name in ("Batch", "Closed"):
                a_kind = A_BATCH if name == "Batch" else A_CLOSED
                count = _saturating_count(_num(arg))
            elif name == "Replay":
                a_kind = A_REPLAY
                replay = {k: (None if v is None else [_num(x) for x in v]) if k == "window" else _num(v)
                          for k, v in arg.items()}
                return {"arrival_kind": a_kind, "arrival_rate": 0.0, "arrival_count": 0, "arrival_gap": -1,
                        "open_arrivals": True, "replay": replay}
        return {"arrival_kind": a_kind, "arrival_rate": rate, "arrival_count": count, "arrival_gap": gap,
                "open_arrivals": open_arrivals(arrival)}

    def blocks(self) -> dict:
        """The statement code: the init and turn blocks, then the session."""
        ir, blocks = self.ir, self.ir["blocks"]
        for which in ("init", "turn"):
            if any(not isinstance(st, dict) or set(st) - {"Set", "Observe"} for st in blocks[ir[which]]):
                raise SqError(f"malformed IR: the {which} block may only `set` and `observe`",
                              phase="validate")
        init_pc = self.block_code(ir["init"], S_RET) if blocks[ir["init"]] else -1
        turn_pc = self.block_code(ir["turn"], S_RET) if blocks[ir["turn"]] else -1
        session_pc = self.block_code(ir["session"], S_END)
        return {"init_pc": init_pc, "turn_pc": turn_pc, "session_pc": session_pc,
                "stmts": np.array(self.stmts, dtype=np.int32), "sites": self.sites, "run_items": self.run_items}

    def pool_tables(self) -> dict:
        """Each pool's queue and evict keys and its spill."""
        key_start, key_count, keys, evict_start, evict_count, spills = [], [], [], [], [], []
        for pool in self.pools:
            self.check_pool(pool)
            spills.append(self.spill(pool))
            key_start.append(len(keys))
            pool_keys = pool.get("queue") or []
            key_count.append(len(pool_keys))
            keys += [self.expr(k) for k in pool_keys]
            evict = pool.get("evict", "Lru")
            evict_keys = [] if evict == "Lru" else evict["By"]
            evict_start.append(len(keys))
            evict_count.append(len(evict_keys))
            keys += [self.expr(k) for k in evict_keys]
            self.max_keys = max(self.max_keys, len(pool_keys), len(evict_keys) + 1)
        return {"pool_key_start": np.array(key_start, dtype=np.int32),
                "pool_key_count": np.array(key_count, dtype=np.int32),
                "pool_keys": np.array(keys, dtype=np.int32),
                "pool_evict_start": np.array(evict_start, dtype=np.int32),
                "pool_evict_count": np.array(evict_count, dtype=np.int32),
                "pool_spill": np.array(spills, dtype=SPILL_DTYPE)}

    def pool_settings(self) -> dict:
        """Each pool's capacity, block, admitting stage and preemption order: numbers, no expressions."""
        pools = self.pools
        return {
            "pool_caps": np.array([_num(p["cap"]) for p in pools], dtype=np.float64),
            "pool_blocks": np.array([_num(p["block"]) if p.get("block") is not None else 0.0
                                     for p in pools], dtype=np.float64),
            "pool_admit_via": np.array([-1 if p.get("admit_via") is None else int(p["admit_via"])
                                        for p in pools], dtype=np.int32),
            "pool_lifo": np.array([int(p.get("preempt", "None") == "Lifo") for p in pools], dtype=np.int32)}

    def spill(self, pool: dict) -> tuple:
        """A pool's SPILL_DTYPE row: its tier pool, link stage, work and when expressions (-1: no spill)."""
        spill = pool.get("spill")
        if spill is None:
            return _record(SPILL_DTYPE, to=-1, via=-1, work=-1, when=-1)
        to, via = spill["to"], spill["via"]
        if not (isinstance(to, int) and 0 <= to < len(self.pools)
                and isinstance(via, int) and 0 <= via < len(self.stages)):
            raise SqError(f"malformed IR: pool `{pool['name']}` spills to {to} via {via}", phase="validate")
        return _record(SPILL_DTYPE, to=to, via=via, work=self.expr(spill["work"]), when=self.expr(spill["when"]))

    def gauges(self) -> dict:
        gauges = self.ir.get("gauges", [])
        return {"gauge_names": [g["name"] for g in gauges],
                "gauge_exprs": np.array([self.expr(g["expr"]) for g in gauges], dtype=np.int32)}

    def code_and_depths(self, step_exprs: np.ndarray) -> dict:
        """The expression code, once every expression is in, and the stack it needs."""
        return {"code": np.array(self.code, dtype=np.int32), "consts": np.array(self.consts, dtype=np.float64),
                **self.chain_depth(step_exprs),
                "max_keys": self.max_keys, "max_flow_stages": self.max_flow_stages,
                "kv_budget": bool(self.contexts_read & {"Kvb", "Kvp"}),
                "kv_iteration": bool((self.contexts_read | self.cost_contexts) & {"Kvb", "Kvp", "Kvm"}),
                "estimates": self.estimates,
                "budget_totals": bool(self.contexts_read & {"Nres", "Ndec", "Kvb", "Kvp"})}

    def hold_tables(self) -> dict:
        return {"holds": np.array(self.holds, dtype=np.int32),
                "hold_offsets": np.array(self.hold_offsets, dtype=np.int32),
                "hold_pcs": np.array(self.hold_pcs, dtype=np.int32),
                "max_hold_depth": self.max_depth_holds, "max_hold_pools": self.max_hold_pools}

    def run_settings(self) -> dict:
        """The `run {}` settings, and the trace with the attribute slots its turns load."""
        ir = self.ir
        return {"horizon": _num(ir["horizon"]), "warmup": _num(ir.get("warmup", 0.0)),
                "seed": int(ir.get("seed", 1)), "arrivals": int(ir.get("arrivals") or 0),
                "trace": ir.get("trace"), "trace_ordered": bool(ir.get("trace_ordered", False)),
                "slot_trace": tuple(self.slot(ir.get(k, d)) for k, d in (
                    ("slot_new", 3), ("slot_out", 4), ("slot_think", 5), ("slot_forced", 7), ("slot_more", 6))),
                **self.prefix()}

    def prefix(self) -> dict:
        """A trace's shared prefix cache (an extension): its capacity and the slots it sets."""
        cap = self.ir.get("trace_prefix")
        if cap is None:
            return {}
        return {"prefix_cap": _num(cap), "slot_prefix": tuple(self.slot(self.attrs.index(n)) for n in PREFIX_ATTRS)}

    def slots(self) -> dict:
        """The attribute slots the engine writes itself (checked against the program's attributes)."""
        ir = self.ir
        return {"n_attrs": len(self.attrs),
                "slot_serial": self.slot(ir.get("slot_serial", 1)), "slot_turn": self.slot(ir.get("slot_turn", 2)),
                "slot_cached": self.slot(ir.get("slot_cached", 0)),
                "slot_computed": self.slot(ir.get("slot_computed", 8))}

    def names(self) -> dict:
        """The report's names: observes, stages and pools (with their indices in their families)."""
        return {"observe_names": list(self.ir.get("observes", [])),
                "stage_names": [s["name"] for s in self.stages],
                "stage_indices": [s.get("index") for s in self.stages],
                "pool_names": [p["name"] for p in self.pools],
                "pool_indices": [p.get("index") for p in self.pools]}

    # -- statements ------------------------------------------------------------
    def block_code(self, index: int, terminator: int) -> int:
        start = len(self.stmts)
        self.inline(index)
        self.stmt_op(terminator)
        return start

    def inline(self, index: int) -> None:
        for position, stmt in enumerate(self.ir["blocks"][index]):
            self.at = ("statement", index, position)
            self.statement(stmt)

    def inline_index(self, index) -> None:
        """Inline block `index` of the IR; a block may not contain itself."""
        blocks = self.ir["blocks"]
        if not isinstance(index, int) or not 0 <= index < len(blocks) or index in self.open_blocks:
            raise SqError(f"malformed IR: block {index} does not exist or contains itself", phase="validate")
        self.open_blocks.add(index)
        self.inline(index)
        self.open_blocks.discard(index)

    def slot(self, v) -> int:
        if not isinstance(v, int) or not 0 <= v < len(self.attrs):
            raise SqError(f"malformed IR: attribute slot {v} (the program has {len(self.attrs)})",
                          phase="validate")
        return v

    def ref(self, ref: dict, table: list, what: str) -> tuple[int, int]:
        base, count = ref["base"], ref["count"]
        if not (isinstance(base, int) and isinstance(count, int) and count >= 1 and base >= 0
                and base + count <= len(table)):
            raise SqError(f"malformed IR: {what} reference {base}+{count} (the program has {len(table)})",
                          phase="validate")
        return base, count

    def ref_operand(self, ref: dict, table: list, what: str) -> dict:
        """A Ref operand (sq/lower/_bytecode.pxd): the checked row range, then the index expression (-1: none)."""
        base, count = self.ref(ref, table, what)
        index = self.expr(ref["index"]) if ref.get("index") is not None else -1
        return {"base": base, "count": count, "index": index}

    def stmt_op(self, op: int, **operands) -> None:
        self.stmts += encode("stmts", op, **operands)

    def op(self, op: int, **operands) -> None:
        self.code += encode("code", op, **operands)

    def one(self, op: int, arg: int) -> None:
        """An XOne instruction: the commonest, so written here, not by the general `encode` (a
        bare opcode, X_BARE_LEN long, is appended as it is)."""
        words = [op] * XONE_LEN
        words[XONE_ARG] = arg
        self.code += words

    def statement(self, stmt) -> None:
        if stmt == "Turn":
            self.stmt_op(S_TURN)
            return
        if stmt == "End":
            self.stmt_op(S_END)
            return
        (name, arg), = stmt.items()
        if name == "Set":
            self.stmt_op(S_SET, target=self.slot(arg[0]), expr=self.expr(arg[1]))
        elif name == "Observe":
            if not isinstance(arg[0], int) or not 0 <= arg[0] < self.n_observes:
                raise SqError(f"malformed IR: observe {arg[0]}", phase="validate")
            self.stmt_op(S_OBSERVE, target=arg[0], expr=self.expr(arg[1]))
        elif name == "Branch":
            self.branch(*arg)
        elif name == "Loop":
            top = len(self.stmts)
            self.inline_index(arg)
            self.stmt_op(S_JUMP, target=top)
        elif name == "Choose":
            keys = [self.expr(k) for k in arg["key"]]
            self.max_keys = max(self.max_keys, len(keys))
            if not keys:
                raise SqError("malformed IR: `choose` without keys", phase="validate")
            self.stmt_op(S_CHOOSE, var=self.slot(arg["var"]), count=self.expr(arg["count"]), keys=keys)
        elif name == "Run":
            self.run(arg)
        elif name == "Hold":
            self.hold(arg)
        elif name in ("Release", "Drop"):
            self.stmt_op(S_RELEASE if name == "Release" else S_DROP, ref=self.ref_operand(arg, self.pools, "pool"))
        elif name in ("Grow", "Load"):
            self.grow_or_load(name, *((arg["pool"], arg["units"]) if isinstance(arg, dict) else arg))
        else:
            raise SqError(f"malformed IR: unknown statement `{name}`", phase="validate")

    def branch(self, guard, then_b: int, else_b: int) -> None:
        out = self.stmts
        self.sites.append(f"`branch ({self.source(guard)})`")
        at = len(out)
        # `else` (a keyword: given by dict) is the address past the then-block, set once that is in
        self.stmt_op(S_BRANCH, guard=self.expr(guard), site=len(self.sites) - 1, **{"else": -1})
        self.inline_index(then_b)
        if self.ir["blocks"][else_b]:
            jump_at = len(out)
            self.stmt_op(S_JUMP, target=-1)
            out[at + SB_ELSE] = len(out)
            self.inline_index(else_b)
            out[jump_at + SJ_TARGET] = len(out)
        else:
            out[at + SB_ELSE] = len(out)

    def grow_or_load(self, name: str, ref: dict, amount) -> None:
        pool = self.ref_operand(ref, self.pools, "pool")
        pool_text = self.pools[pool["base"]]["name"]   # the reference names the pool without its index
        if name == "Grow":
            self.sites.append(f"grow outside a hold of pool `{pool_text}`")
            self.stmt_op(S_GROW, ref=pool, amount=self.expr(amount), site=len(self.sites) - 1)
        else:
            self.sites.append(pool_text)   # the fit message shows the amount's value
            self.sites.append(f"`load {pool_text}` outside a hold of `{pool_text}`")
            self.stmt_op(S_LOAD, ref=pool, amount=self.expr(amount), site=len(self.sites) - 2)

    def shared_stages(self) -> list[float]:
        """Capacity of each stage some run holds together with another (0: not shared); arrays share whole."""
        shared = [0.0] * len(self.stages)

        def visit(block):
            for stmt in block:
                if not isinstance(stmt, dict):
                    continue
                (name, arg), = stmt.items()
                if name == "Run" and arg.get("also"):
                    for ref in [arg["stage"], *arg["also"]]:
                        base, count = self.ref(ref, self.stages, "stage")
                        for k in range(base, base + count):
                            phi = self.stages[k]["kind"].get("Ps") if isinstance(self.stages[k]["kind"], dict) else None
                            if not (isinstance(phi, dict) and "Num" in phi and _num(phi["Num"]) > 0):
                                raise SqError(f"malformed IR: stage `{self.stages[k]['name']}` is shared: it must be "
                                              "`ps(φ)` with a constant φ above 0", phase="validate")
                            shared[k] = _num(phi["Num"])
        for block in self.ir["blocks"]:
            visit(block)
        if any(shared) and self.ir.get("share") is None:
            raise SqError("malformed IR: a run over several stages needs the program's `share`", phase="validate")
        return shared

    def check_pool(self, pool: dict) -> None:
        via = pool.get("admit_via")
        if via is not None and not (isinstance(via, int) and 0 <= via < len(self.stages)):
            raise SqError(f"malformed IR: pool `{pool['name']}` admitted via stage {via}", phase="validate")

    def hold(self, arg: dict) -> None:
        pools = arg["pools"]
        if not pools:
            raise SqError("malformed IR: a hold without pools", phase="validate")
        lease_pool, lease_time = -1, -1
        if arg.get("lease") is not None:
            ref, time = arg["lease"]
            written = [i for i, (r, _, _) in enumerate(pools) if r == ref]
            if not written:
                raise SqError("malformed IR: a lease on a pool the hold does not take", phase="validate")
            lease_pool, lease_time = written[0], self.expr(time)
        row = _row(H_HEAD_LEN, {H_NPOOLS: len(pools), H_LEASE_POOL: lease_pool, H_LEASE_TIME: lease_time,
                                H_CACHE: self.expr(arg["cache"]) if arg.get("cache") is not None else -1,
                                H_REUSE: self.expr(arg["reuse"]) if arg.get("reuse") is not None else -1})
        for ref, units, reserve in pools:
            pool = self.ref_operand(ref, self.pools, "pool")
            row += _row(HP_LEN, {HP_REF + REF_BASE: pool["base"], HP_REF + REF_COUNT: pool["count"],
                                 HP_REF + REF_INDEX: pool["index"],
                                 HP_UNITS: self.expr(units),
                                 HP_RESERVE: self.expr(reserve) if reserve is not None else -1})
        h = len(self.hold_offsets)
        self.hold_offsets.append(len(self.holds))
        self.holds += row
        self.max_hold_pools = max(self.max_hold_pools, len(pools))
        self.hold_pcs.append(len(self.stmts))
        self.stmt_op(S_HOLD, hold=h)
        self.hold_depth += 1
        self.max_depth_holds = max(self.max_depth_holds, self.hold_depth)
        self.inline_index(arg["body"])
        self.hold_depth -= 1
        self.stmt_op(S_HOLD_END, hold=h)

    def run(self, arg: dict) -> None:
        mode = {"Plain": M_PLAIN, "Prefill": M_PREFILL, "Decode": M_DECODE}[arg.get("mode", "Plain")]
        ref = arg["stage"]
        if isinstance(ref, list):  # several stages: a flow
            if len(ref) != 1:
                raise SqError("runs over several stages are not supported by this engine yet",
                              phase="unsupported")
            ref = ref[0]
        stage = self.ref_operand(ref, self.stages, "stage")
        is_step = [isinstance(self.stages[k]["kind"], dict) and "Step" in self.stages[k]["kind"]
                   for k in range(stage["base"], stage["base"] + stage["count"])]
        if (mode != M_PLAIN) != is_step[0] or len(set(is_step)) != 1:
            raise SqError("malformed IR: `prefill`/`decode` go with step stages only", phase="validate")
        grow_ref = arg.get("growing")
        growing, growing_site = {"base": -1, "count": 0, "index": -1}, -1
        if grow_ref is not None:
            growing = self.ref_operand(grow_ref, self.pools, "pool")
            self.sites.append(f"`growing {self.pools[growing['base']]['name']}` outside a hold of it")
            growing_site = len(self.sites) - 1
        also = [self.ref_operand(other, self.stages, "stage") for other in arg.get("also") or []]
        self.max_flow_stages = max(self.max_flow_stages, 1 + len(also))
        self.run_items[len(self.stmts)] = self.at
        self.stmt_op(S_RUN, stage=stage, work=self.expr(arg["work"]), mode=mode, growing=growing,
                     growing_site=growing_site, also=also)

    # -- expressions -----------------------------------------------------------
    def expr(self, e) -> int:
        """Compile one expression; returns its entry offset."""
        start = len(self.code)
        self.depth = self.expr_depth = 0
        self.calls = []
        self.emit(e)
        self.code.append(X_RET)
        self.frames[start] = (self.expr_depth, self.calls)
        return start

    def cost_expr(self, e) -> int:
        """A step stage's cost, whose reads are kept apart: it runs right after its iteration sets
        kvb and kvp, so it never sees the sums of the Budget moment before it."""
        others, self.contexts_read = self.contexts_read, set()
        try:
            return self.expr(e)
        finally:
            self.cost_contexts |= self.contexts_read
            self.contexts_read = others

    def push(self, n: int = 1) -> None:
        self.depth += n
        self.max_depth = max(self.max_depth, self.depth)
        self.expr_depth = max(self.expr_depth, self.depth)

    def chain_depth(self, step_exprs: np.ndarray) -> dict:
        """The expression stack the program needs (stack_depth): `budget_left(S)` evaluates S's
        budget and chunk on top of the expression that calls it, so an expression needs its own
        depth or, at each such call, the depth there plus what S's budget and chunk need, deepest
        first. What a call of `budget_left(S)` needs above itself is stage_needs[S] (the engine's
        guard at each call: the callee's need, not the program's deepest expression).
        A cycle of such calls (a stage's budget or chunk reaching its own budget_left) would
        evaluate without end, and is refused."""
        stage_need: dict[int, int] = {}
        open_stages: list[int] = []

        def need_of_expr(off: int) -> int:
            own, calls = self.frames[off]
            need = own
            for at, base, count in calls:
                need = max(need, at + max(need_of_stage(k) for k in range(base, base + count)))
            return need

        def need_of_stage(k: int) -> int:
            if k in stage_need:
                return stage_need[k]
            budget, chunk = int(step_exprs[k]["budget"]), int(step_exprs[k]["chunk"])
            if budget < 0:
                return 0                       # not a step stage: budget_left fails, evaluating nothing
            if k in open_stages:
                cycle = [self.stages[j]["name"] for j in open_stages[open_stages.index(k):]] + [self.stages[k]["name"]]
                raise SqError("`budget_left` cycle: " + " → ".join(f"`{n}`" for n in cycle)
                              + " (a step stage's budget or chunk reaches its own budget_left, "
                              "which would evaluate without end)", phase="validate")
            open_stages.append(k)
            stage_need[k] = max(need_of_expr(budget), need_of_expr(chunk))
            open_stages.pop()
            return stage_need[k]

        stack = max([self.max_depth] + [need_of_expr(off) for off in self.frames])
        needs = [need_of_stage(k) for k in range(len(step_exprs))]
        return {"stack_depth": stack + 4, "stage_needs": np.array(needs, dtype=np.int64)}

    def const(self, v: float) -> int:
        key = (repr(v), math.copysign(1.0, v) if v == 0 else 0)
        if key not in self.const_index:
            self.const_index[key] = len(self.consts)
            self.consts.append(v)
        return self.const_index[key]

    def emit(self, e) -> None:
        c = self.code
        (name, arg), = e.items()
        if name == "Num":
            self.one(X_NUM, self.const(_num(arg))); self.push()
        elif name == "Attr":
            self.one(X_ATTR, self.slot(arg)); self.push()
        elif name == "Ctx":
            self.one(X_CTX, CTX[arg]); self.push()
            self.contexts_read.add(arg)
        elif name == "Unary":
            op, a = arg
            self.emit(a)
            c.append(X_NEG if op == "Neg" else X_NOT)
        elif name == "Binary":
            op, a, b = arg
            if op in ("And", "Or"):
                self.emit(a)
                at = len(c)
                self.one(X_AND if op == "And" else X_OR, -1)   # the target, set once the right side is in
                self.depth -= 1
                self.emit(b)
                c.append(X_TRUTH)
                c[at + XONE_ARG] = len(c)
            else:
                self.emit(a)
                self.emit(b)
                c.append(BINARY[op]); self.depth -= 1
        elif name == "Cond":
            test, a, b = arg
            self.emit(test)
            at = len(c)
            self.one(X_JZ, -1); self.depth -= 1
            self.emit(a)
            jump = len(c)
            self.one(X_JMP, -1); self.depth -= 1
            c[at + XONE_ARG] = len(c)
            self.emit(b)
            c[jump + XONE_ARG] = len(c)
        elif name == "Call":
            self.call(*arg)
        elif name == "Sample":
            dist, args = arg
            for a in args:
                self.emit(a)
            code = DIST_CODES[dist]
            if len(args) != dist_arity(code):
                raise SqError(f"malformed IR: `~{dist.lower()}` takes {dist_arity(code)} argument(s)",
                              phase="validate")
            self.op(X_SAMPLE, dist=code, nargs=len(args))
            self.depth -= len(args)
            self.push()
        else:
            raise SqError(f"malformed IR: unknown expression `{name}`", phase="validate")

    def call(self, fn: str, args: list) -> None:
        if fn in ("Min", "Max", "Pow"):
            self.emit(args[0]["Expr"]); self.emit(args[1]["Expr"])
            self.code.append({"Min": X_MIN, "Max": X_MAX, "Pow": X_POW}[fn]); self.depth -= 1
        elif fn in FN1:
            self.emit(args[0]["Expr"])
            self.one(X_FN1, FN1[fn])
        elif fn == "Price":
            self.estimates = True
            ref = args[0]["Stage"]
            self.emit(args[1]["Expr"]); self.emit(args[2]["Expr"])
            self.ref_args(X_PRICE, None, ref)
            self.depth -= 2
        elif fn in STAGE_FN:
            self.estimates |= fn in ("EstLambda", "EstRho", "EstWait")
            self.ref_args(X_STAGE, STAGE_FN[fn], args[0]["Stage"])
        elif fn in POOL_FN:
            self.ref_args(X_POOL, POOL_FN[fn], args[0]["Pool"])
        else:
            raise SqError(f"malformed IR: unknown function `{fn}`", phase="validate")

    def ref_args(self, op: int, fn, ref: dict) -> None:
        base, count = self.ref(ref, self.pools if op == X_POOL else self.stages,
                               "pool" if op == X_POOL else "stage")
        has_index = ref.get("index") is not None
        if has_index:
            self.emit(ref["index"])
            self.depth -= 1
        if op == X_STAGE and fn == STAGE_FN["BudgetLeft"]:
            self.calls.append((self.depth + 1, base, count))   # nested above the result's slot
        fn_operand = {} if fn is None else {"fn": fn}   # X_PRICE has none
        self.op(op, base=base, count=count, has_index=int(has_index), **fn_operand)
        self.push()

    # -- source form (for run-time error messages) ---------------------------
    def source(self, e) -> str:
        return _Printer(self.attrs, self.stages, self.pools).text(e)


# ---- instruction formats: what `encode` writes and `decode` reads --------------------------------
# Each opcode's operand layout (an enum of sq/lower/_bytecode.pxd); an opcode not listed has none.
_LAYOUT = {
    "code": {X_NUM: XOne, X_ATTR: XOne, X_CTX: XOne, X_FN1: XOne, X_AND: XOne, X_OR: XOne, X_JZ: XOne,
             X_JMP: XOne, X_STAGE: XRef, X_POOL: XRef, X_PRICE: XPrice, X_SAMPLE: XSample},
    "stmts": {S_SET: SValue, S_OBSERVE: SValue, S_JUMP: SJump, S_BRANCH: SBranch, S_CHOOSE: SChoose,
              S_RUN: SRun, S_HOLD: SHold, S_HOLD_END: SHold, S_RELEASE: SPool, S_DROP: SPool,
              S_GROW: SPool, S_LOAD: SPool},
}
_BARE = {"code": XBare, "stmts": SBare}
_AMOUNT = {S_GROW, S_LOAD}          # SPool opcodes that also take an amount and a site
_REF_OPERANDS = {"SR_STAGE", "SR_GROWING", "SPOOL_REF"}   # operands that are a Ref (three words)
# variable tails after the fixed part: the tail's member → its count operand, words an item
_TAILS = {"SC_KEYS": ("SC_NKEYS", 1), "SR_ALSO": ("SR_NALSO", REF_LEN)}


def _short(member: str) -> str:
    """An operand's name in `Instruction.operands` and `encode`: `SB_GUARD` → `guard`."""
    return member.split("_", 1)[1].lower()


@dataclass(frozen=True)
class _Format:
    """One opcode's instruction, read off its layout enum: operands (name, offset, a Ref?), the
    length of its fixed part, its variable tail (name, offset of its count, words an item), and
    what `encode` takes: the operands but the tail's count, and the tail."""

    name: str
    operands: tuple
    length: int
    tail: tuple | None
    inputs: tuple
    input_names: frozenset


def _format(kind: str, op: int, name: str) -> _Format:
    members = _LAYOUT[kind].get(op, _BARE[kind]).__members__
    tail_member = next((m for m in members if m in _TAILS), None)
    tail = None
    if tail_member is not None:
        count_member, item = _TAILS[tail_member]
        tail = (_short(tail_member), int(members[count_member]), item)
        length = members[tail_member]
    elif kind == "stmts" and op in _AMOUNT:
        length = SPOOL_AMOUNT_LEN
    else:
        length = next(v for m, v in members.items() if m.endswith("_LEN"))
    operands = tuple((_short(m), int(v), m in _REF_OPERANDS) for m, v in members.items()
                     if not m.endswith("_LEN") and m not in _TAILS and v < length)
    inputs = tuple(o for o in operands if tail is None or o[1] != tail[1])
    words = sorted(at + k for _, at, is_ref in operands for k in range(REF_LEN if is_ref else 1))
    if words != list(range(1, length)):     # every word after the opcode is one operand's
        raise AssertionError(f"{name}'s layout leaves gaps or overlaps: {words}")
    names = frozenset(o[0] for o in inputs) | ({tail[0]} if tail else set())
    return _Format(name, operands, int(length), tail, inputs, names)


# Cython's enums are IntFlags, whose constructor accepts any number: look names up instead
_FORMATS = {kind: {int(v): _format(kind, int(v), name) for name, v in enum.__members__.items()}
            for kind, enum in (("code", ExprOp), ("stmts", StmtOp))}


def encode(kind: str, op: int, **operands) -> list[int]:
    """One instruction's words: the opcode, then each operand at its offset in the opcode's layout.

    Operands are named as `decode` names them (a Ref is {"base", "count", "index"}; a tail, the
    keys of a choose or the other stages of a run, a list, whose count is written from it); every
    operand must be given, and no other.
    """
    fmt = _FORMATS[kind][op]
    words = [op] * fmt.length             # every word after the opcode is set below (`_format` checks)
    try:
        for name, at, is_ref in fmt.inputs:
            value = operands[name]
            if is_ref:
                words[at + REF_BASE], words[at + REF_COUNT], words[at + REF_INDEX] = \
                    value["base"], value["count"], value["index"]
            else:
                words[at] = value
        if fmt.tail is not None:
            name, count_at, item = fmt.tail
            words[count_at] = len(operands[name])
            for value in operands[name]:
                words += _ref_words(value) if item == REF_LEN else [value]
    except KeyError:
        pass
    else:
        if len(operands) == len(fmt.input_names):   # each one read above: no other given
            return words
    raise ValueError(f"`{fmt.name}` takes {sorted(fmt.input_names)}, given {sorted(operands)}")


def _ref_words(ref: dict) -> list[int]:
    words = [0] * REF_LEN
    words[REF_BASE], words[REF_COUNT], words[REF_INDEX] = ref["base"], ref["count"], ref["index"]
    return words


def _ref(code, at: int) -> dict:
    return {"base": int(code[at + REF_BASE]), "count": int(code[at + REF_COUNT]),
            "index": int(code[at + REF_INDEX])}


@dataclass(frozen=True)
class Instruction:
    """One decoded instruction: its address, opcode name, named operands and length."""

    pc: int
    name: str
    operands: dict
    length: int

    def __str__(self) -> str:
        args = " ".join(f"{k}={_operand_text(v)}" for k, v in self.operands.items())
        return f"{self.pc:>6} {self.name:<11} {args}".rstrip()


def _operand_text(v) -> str:
    if isinstance(v, dict):
        return "(" + " ".join(f"{k}={_operand_text(x)}" for k, x in v.items()) + ")"
    if isinstance(v, list):
        return "[" + ", ".join(_operand_text(x) for x in v) + "]"
    return str(v)


def decode(code, kind: str, start: int = 0):
    """Yield the `Instruction`s of `code` (kind "code": expressions, "stmts": statements) in order,
    from address `start` (an instruction's).

    SqError if an opcode is unknown or an instruction runs past the end: the code is not what
    lowering writes.
    """
    if kind not in _LAYOUT:
        raise ValueError(f"kind is 'code' or 'stmts', not {kind!r}")
    code = np.asarray(code)
    pc, end = start, len(code)
    while pc < end:
        op = int(code[pc])
        fmt = _FORMATS[kind].get(op)
        if fmt is None:
            raise SqError(f"bytecode ({kind}) at {pc}: unknown opcode {op}", phase="validate")
        length = fmt.length
        if fmt.tail is not None:
            _, count_at, item = fmt.tail
            length = end + 1 if pc + count_at >= end else length + item * int(code[pc + count_at])
        if pc + length > end:
            raise SqError(f"bytecode ({kind}) at {pc}: `{fmt.name}` runs past the end ({end})", phase="validate")
        operands = {name: _ref(code, pc + at) if is_ref else int(code[pc + at]) for name, at, is_ref in fmt.operands}
        if fmt.tail is not None:
            name, _, item = fmt.tail
            at = range(pc + fmt.length, pc + length, item)
            operands[name] = [_ref(code, a) for a in at] if item == REF_LEN else [int(code[a]) for a in at]
        yield Instruction(pc, fmt.name, operands, length)
        pc += length


def instruction_at(code, pc: int, kind: str) -> Instruction:
    """The one instruction at address `pc` (the engine's error messages read the statement there)."""
    return next(decode(code, kind, pc))


def disassemble(what, kind: str | None = None) -> str:
    """The bytecode as text, one instruction a line (address, opcode, named operands), like `dis`.

    `what` is a `Lowered` (both its statement code and its expression code) or one code array
    with its `kind` ("stmts" or "code").
    """
    if isinstance(what, Lowered):
        return ("statements:\n" + _listing(what.stmts, "stmts", what)
                + "\nexpressions:\n" + _listing(what.code, "code", what))
    if kind is None:
        raise ValueError("disassemble(code, kind): kind is 'code' or 'stmts'")
    return _listing(what, kind, None)


def _listing(code, kind: str, lowered: Lowered | None) -> str:
    lines = []
    for ins in decode(code, kind):
        note = _note(ins, lowered) if lowered is not None else ""
        lines.append(f"{ins}  # {note}" if note else str(ins))
    return "\n".join(lines)


_NAMES = {X_CTX: {v: k for k, v in CTX.items()}, X_FN1: {v: k for k, v in FN1.items()},
          X_STAGE: {v: k for k, v in STAGE_FN.items()}, X_POOL: {v: k for k, v in POOL_FN.items()},
          X_SAMPLE: {v: k for k, v in DIST_CODES.items() if k[0].isupper()}}


def _note(ins: Instruction, lowered: Lowered) -> str:
    """What an operand means in the program (like `dis`'s argrepr): a constant, a name, a site."""
    ops = ins.operands
    if ins.name == "X_NUM":
        return display(float(lowered.consts[ops["arg"]]))
    if ins.name in ("X_CTX", "X_FN1"):
        return _NAMES[ExprOp.__members__[ins.name]].get(ops["arg"], "?")
    if ins.name in ("X_STAGE", "X_POOL"):
        names = lowered.stage_names if ins.name == "X_STAGE" else lowered.pool_names
        return f"{_NAMES[ExprOp.__members__[ins.name]].get(ops['fn'], '?')} of {names[ops['base']]}"
    if ins.name == "X_SAMPLE":
        return _NAMES[X_SAMPLE].get(ops["dist"], "?")
    if ins.name == "S_BRANCH":
        return lowered.sites[ops["site"]]
    if ins.name == "S_RUN":
        return lowered.stage_names[ops["stage"]["base"]]
    return ""


def _row(width: int, columns: dict) -> list[int]:
    """A table row of `width` words from {column offset (sq/lower/_bytecode.pxd): value}; all must be given."""
    row = [None] * width
    for at, value in columns.items():
        row[at] = value
    assert None not in row, row
    return row


def _record(dtype: np.dtype, **fields) -> tuple:
    """A row of a structured table, its fields by name (all of them, in the dtype's order)."""
    if set(fields) != set(dtype.names):
        raise ValueError(f"a {dtype.names} row, given {sorted(fields)}")
    return tuple(fields[name] for name in dtype.names)


def _saturating_count(x: float) -> int:
    if not x > 0:
        return 0
    return int(min(x, 2.0**64 - 1))


# ---- the IR expression printed back in source form ---------------------------
_BIN_TEXT = {"Add": ("+", 4), "Sub": ("-", 4), "Mul": ("*", 5), "Div": ("/", 5),
             "Lt": ("<", 3), "Le": ("<=", 3), "Gt": (">", 3), "Ge": (">=", 3),
             "Eq": ("==", 3), "Ne": ("!=", 3), "And": ("&&", 2), "Or": ("||", 1)}
_CTX_TEXT = {"Now": "now", "Waited": "waited", "Size": "size", "Age": "age", "Last": "last",
             "Queued": "waiting", "N": "present", "Ntok": "tokens", "Ndec": "decoders",
             "Npre": "prefilled", "Nres": "residents", "Kvb": "kv_decode", "Kvp": "kv_prefill",
             "Attn": "attention", "Decoding": "decoding", "Admission": "admission",
             "Remaining": "remaining", "Kvm": "kv_decode_max"}
_FN_TEXT = {"EstLambda": "est_lambda", "EstRho": "est_rho", "EstWait": "est_wait",
            "BudgetLeft": "budget_left", "CachedIn": "cachedin"}


class _Printer:
    """Prints an IR expression with the fewest parentheses the grammar needs."""

    def __init__(self, attrs, stages, pools):
        self.attrs, self.stages, self.pools = attrs, stages, pools

    def text(self, e, need: int = 0) -> str:
        body, prec = self.form(e)
        return f"({body})" if prec < need else body

    def form(self, e):
        (name, arg), = e.items()
        if name == "Num":
            return display(_num(arg)), 8
        if name == "Attr":
            return self.attrs[arg] if arg < len(self.attrs) else f"attr{arg}", 8
        if name == "Ctx":
            return _CTX_TEXT.get(arg, arg.lower()), 8
        if name == "Unary":
            op, a = arg
            return ("-" if op == "Neg" else "!") + self.text(a, 6), 6
        if name == "Binary":
            op, a, b = arg
            if op == "Pow":
                return f"{self.text(a, 8)} ^ {self.text(b, 6)}", 7
            sym, p = _BIN_TEXT[op]
            right = p + 1
            left = p + 1 if p == 3 else p
            return f"{self.text(a, left)} {sym} {self.text(b, right)}", p
        if name == "Cond":
            t, a, b = arg
            return f"{self.text(t, 1)} ? {self.text(a)} : {self.text(b)}", 0
        if name == "Sample":
            dist, args = arg
            return f"~{dist.lower()}({', '.join(self.text(a) for a in args)})", 6
        if name == "Call":
            fn, args = arg
            return f"{_FN_TEXT.get(fn, fn.lower())}({', '.join(self.arg(a) for a in args)})", 8
        return name, 8

    def arg(self, a) -> str:
        (kind, v), = a.items()
        if kind == "Expr":
            return self.text(v)
        table = self.stages if kind == "Stage" else self.pools
        name = table[v["base"]]["name"] if v["base"] < len(table) else "?"
        if v.get("index") is None:
            return name
        return f"{name}[{self.text(v['index'])}]"
