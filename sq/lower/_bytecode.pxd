# The bytecode contract: the one definition of what sq/lower/lowering.py writes and sq/_engine.pyx reads.
#
# The engine cimports these enums (C constants: its dispatch compiles to switches); lower.py
# imports them from sq.lower._bytecode, whose Python enums Cython makes from the `cpdef enum`s below.
# An instruction is its opcode, then its operands at the named offsets from the opcode's address;
# every `*_LEN` is the instruction's length (so the next instruction starts at pc + *_LEN).
# A pool or stage reference takes three words, laid out by `Ref`.
from libc.stdint cimport int32_t

# ---- expression opcodes (postfix, over a stack of doubles) ---------------------------------
cpdef enum ExprOp:
    X_NUM = 1          # XOne: constant index
    X_ATTR = 2         # XOne: attribute slot
    X_CTX = 3          # XOne: context variable (Context)
    X_NEG = 4
    X_NOT = 5
    X_TRUTH = 6        # 0/1 of the top (the right side of && and ||)
    X_ADD = 7
    X_SUB = 8
    X_MUL = 9
    X_DIV = 10
    X_POW = 11
    X_LT = 12
    X_LE = 13
    X_GT = 14
    X_GE = 15
    X_EQ = 16
    X_NE = 17
    X_AND = 18         # XOne: target when the left side decides (short circuit)
    X_OR = 19          # XOne: target
    X_JZ = 20          # XOne: target
    X_JMP = 21         # XOne: target
    X_FN1 = 22         # XOne: function (Fn1), one argument on the stack
    X_MIN = 23
    X_MAX = 24
    X_STAGE = 25       # XRef: a stage function (StageFn) of a stage (index on the stack if has_index)
    X_POOL = 26        # XRef: a pool function (PoolFn)
    X_PRICE = 27       # XPrice: s_hit, ds (then the index) on the stack
    X_SAMPLE = 28      # XSample: its arguments on the stack
    X_RET = 29         # the end of an expression: its value is the top

# operand layouts of the expression opcodes (an opcode without operands is X_BARE_LEN long)
cpdef enum XBare:
    X_BARE_LEN = 1

cpdef enum XOne:       # X_NUM, X_ATTR, X_CTX, X_FN1; X_AND, X_OR, X_JZ, X_JMP
    XONE_ARG = 1
    XONE_LEN = 2

cpdef enum XRef:       # X_STAGE, X_POOL
    XREF_FN = 1
    XREF_BASE = 2
    XREF_COUNT = 3
    XREF_HAS_INDEX = 4
    XREF_LEN = 5

cpdef enum XPrice:
    XPRICE_BASE = 1
    XPRICE_COUNT = 2
    XPRICE_HAS_INDEX = 3
    XPRICE_LEN = 4

cpdef enum XSample:
    XSAMPLE_DIST = 1   # sq.engine._random's distribution code
    XSAMPLE_NARGS = 2
    XSAMPLE_LEN = 3

# ---- the operands of X_CTX, X_FN1, X_STAGE, X_POOL -----------------------------------------
# the IR's context variables, by id: anonymous, since the engine indexes State.ctxv with them
# (Cython refuses a named enum as an array index)
cpdef enum:
    CTX_NOW = 0
    CTX_WAITED = 1
    CTX_SIZE = 2
    CTX_AGE = 3
    CTX_LAST = 4
    CTX_QUEUED = 5
    CTX_PRESENT = 6
    CTX_NTOK = 7
    CTX_NDEC = 8
    CTX_NPRE = 9
    CTX_NRES = 10
    CTX_KVB = 11
    CTX_KVP = 12
    CTX_ATTN = 13
    CTX_DECODING = 14
    CTX_ADMISSION = 15
    CTX_REMAINING = 16
    CTX_KVM = 17       # kv_decode_max (an extension beyond 0.1.2)
    N_CONTEXTS = 18    # the size of a moment's context (State.ctxv)

cpdef enum Fn1:
    FN_ABS = 0
    FN_FLOOR = 1
    FN_CEIL = 2
    FN_SQRT = 3
    FN_EXP = 4
    FN_LN = 5
    FN_SIN = 6         # FN_SIN, FN_COS: an extension (docs/differences.md)
    FN_COS = 7

cpdef enum StageFn:
    SF_QUEUE = 0
    SF_BUSY = 1
    SF_WORK = 2
    SF_EST_LAMBDA = 3
    SF_EST_RHO = 4
    SF_EST_WAIT = 5
    SF_BUDGET_LEFT = 6

cpdef enum PoolFn:
    PF_USED = 0
    PF_FREE = 1
    PF_HOLDERS = 2
    PF_QUEUED = 3
    PF_CACHED_IN = 4

# ---- statement opcodes (one linear code per block, with jumps) -----------------------------
cpdef enum StmtOp:
    S_SET = 1          # SValue: slot
    S_OBSERVE = 2      # SValue: observe id
    S_TURN = 3         # S_BARE_LEN
    S_END = 4          # S_BARE_LEN: the session ends (also the end of the session block)
    S_JUMP = 5         # SJump
    S_BRANCH = 6       # SBranch
    S_CHOOSE = 7       # SChoose
    S_RUN = 8          # SRun
    S_RET = 9          # S_BARE_LEN: the end of an init/turn block
    S_HOLD = 10        # SHold: evaluate the header, join the first pool's queue (the body follows)
    S_HOLD_END = 11    # SHold: the body is done, release and cache
    S_RELEASE = 12     # SPool, SPOOL_LEN long
    S_DROP = 13        # SPool, SPOOL_LEN long
    S_GROW = 14        # SPool, SPOOL_AMOUNT_LEN long
    S_LOAD = 15        # SPool, SPOOL_AMOUNT_LEN long

cpdef enum SBare:
    S_BARE_LEN = 1

cpdef enum Ref:        # a stage or pool reference: the row range base..base+count, then the index
    REF_BASE = 0       # expression (-1: none; an array reference needs one)
    REF_COUNT = 1
    REF_INDEX = 2
    REF_LEN = 3

cpdef enum SValue:     # S_SET, S_OBSERVE
    SV_TARGET = 1      # the slot set, or the observe id
    SV_EXPR = 2
    SV_LEN = 3

cpdef enum SJump:
    SJ_TARGET = 1
    SJ_LEN = 2

cpdef enum SBranch:
    SB_GUARD = 1       # expression
    SB_ELSE = 2        # target when the guard is 0
    SB_SITE = 3        # the guard's text in Lowered.sites (a NaN guard's error)
    SB_LEN = 4

cpdef enum SChoose:    # then SC_NKEYS key expressions
    SC_VAR = 1         # slot set to the chosen candidate
    SC_COUNT = 2       # expression: the number of candidates
    SC_NKEYS = 3
    SC_KEYS = 4

cpdef enum SRun:       # then SR_NALSO stage references (Ref) for a flow's other stages
    SR_STAGE = 1       # Ref
    SR_WORK = 4        # expression
    SR_MODE = 5        # RunMode
    SR_GROWING = 6     # Ref of the pool `growing` names (base -1: none)
    SR_GROWING_SITE = 9
    SR_NALSO = 10
    SR_ALSO = 11

cpdef enum SHold:      # S_HOLD, S_HOLD_END
    SH_HOLD = 1        # the hold's number (Lowered.hold_offsets)
    SH_LEN = 2

cpdef enum SPool:      # S_RELEASE, S_DROP; S_GROW, S_LOAD also take an amount and a site
    SPOOL_REF = 1      # Ref
    SPOOL_LEN = 4
    SPOOL_AMOUNT = 4   # expression
    SPOOL_SITE = 5     # grow: its error's text; load: the fit message's, then the outside one's
    SPOOL_AMOUNT_LEN = 6

# ---- a hold's row in Lowered.holds: the head, then one HoldPool per pool ---------------------
cpdef enum HoldHead:
    H_NPOOLS = 0
    H_CACHE = 1        # expression (-1: no cache)
    H_LEASE_POOL = 2   # which of the hold's pools the lease keeps (-1: no lease)
    H_LEASE_TIME = 3   # expression
    H_REUSE = 4        # expression (-1: unbounded)
    H_HEAD_LEN = 5

cpdef enum HoldPool:
    HP_REF = 0         # Ref
    HP_UNITS = 3       # expression
    HP_RESERVE = 4     # expression (-1: none)
    HP_LEN = 5

# ---- table rows: C structs, whose numpy dtypes sq.lower._bytecode derives (lower.py builds the arrays) ---
cdef struct StepExprsRow:   # Lowered.step_exprs, one per stage (-1: not a step stage)
    int32_t budget          # expression entries
    int32_t chunk
    int32_t cost

cdef struct StepServeRow:   # Lowered.step_serve, one per stage
    int32_t exclusive       # 1: `serve exclusive_prefill`
    int32_t key_start       # the `serve by` keys: Lowered.serve_keys[key_start:key_start + key_count]
    int32_t key_count

cdef struct SpillRow:       # Lowered.pool_spill, one per pool (-1: no spill)
    int32_t to              # the tier pool
    int32_t via             # the link stage
    int32_t work            # expression entries
    int32_t when

cdef struct TraceTurn:      # sq.traces.serq's TraceCorpus.turns, one per turn: the attributes it loads
    double new
    double out
    double think
    double forced

# ---- kinds ------------------------------------------------------------------------------------
cpdef enum StageKind:
    K_FIFO = 0
    K_PS = 1
    K_DELAY = 2
    K_STEP = 3

cpdef enum RunMode:
    M_PLAIN = 0
    M_PREFILL = 1
    M_DECODE = 2

cpdef enum ArrivalKind:
    A_NONE = 0
    A_POISSON = 1
    A_RENEWAL = 2
    A_BATCH = 3
    A_CLOSED = 4
    A_REPLAY = 5        # an extension: arrive replay (sq/traces/replay.py makes its schedule)
    A_POISSON_NOW = 6   # an extension: a poisson rate that reads `now` (thinning: sq/traces/rate.py)
    A_MODULATED = 7     # an extension: a Markov-modulated poisson, `poisson(r1, …) leave(q1, …)`
    A_RENEWAL_RATE = 8  # an extension: `renewal(g) rate(r)`, gaps in r's operational time
