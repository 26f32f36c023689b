# The expression VM (spec chapter 07): `evaluate` and the stage and pool functions it calls.
# Included by sq/_engine.pyx (one translation unit, so the C compiler inlines across files);
# every function here runs without the GIL.


# ---- expressions ---------------------------------------------------------------------
cdef inline int64_t member(State* st, double v, int64_t count, int code, int slot) noexcept nogil:
    """A run-time index: truncated toward zero, negative and NaN are 0; past the end is an error."""
    cdef uint64_t i
    if not (v > 0):
        i = 0
    elif v >= 1.8446744073709552e19:
        i = 0xFFFFFFFFFFFFFFFF         # `as usize` saturates
    else:
        i = <uint64_t> v
    if i >= <uint64_t> count:
        fail(st, code, slot, v, <int64_t> i, count)
        return -1
    return <int64_t> i


cdef inline double ps_virtual(Stage* s, double now) noexcept nogil:
    return s.V + s.rate * (now - s.Vt)


cdef double stage_work(State* st, int32_t k) noexcept nogil:
    """Unfinished work at stage k: remaining service of jobs started, plus the work of waiting ones.
    The sum starts from -0.0, as 0.1.2's (Rust's empty float sum): an empty stage's work is -0."""
    cdef Stage* s = &st.stages[k]
    cdef double total = -0.0, v
    cdef int64_t j
    if s.share_cap > 0:
        return flow_work(st, k)
    if s.kind == K_PS:
        v = ps_virtual(s, st.now)
        for j in range(s.hlen):
            total += s.heap[j].tag - v
        return total
    if s.kind == K_STEP:
        for j in range(s.nres):
            total += st.jobs.rec[s.res[j]].work
        return total
    for j in range(st.jobs.high):
        if st.jobs.rec[j].id >= 0 and st.jobs.stage[j] == k:
            if st.jobs.started[j]:
                total += st.jobs.end[j] - st.now
            else:
                total += st.jobs.rec[j].work
    return total


cdef double stage_fn(State* st, int fn, int32_t k, int slot) noexcept nogil:
    cdef Stage* s = &st.stages[k]
    cdef double lam
    if fn == SF_QUEUE:      # queue: waiting + in service (step: residents)
        return <double> s.n
    if fn == SF_BUSY:      # busy: fifo servers in use; every job of a ps or delay stage; step: scheduled jobs
        if s.kind == K_STEP:
            return <double> (s.na if s.inflight else 0)
        return <double> (s.busy if s.kind == K_FIFO else s.n)   # a shared stage: its flows
    if fn == SF_WORK:
        return stage_work(st, k)
    if fn == SF_EST_LAMBDA:
        return est_lambda(s)
    if fn == SF_EST_RHO:
        return est_rho(s)
    if fn == SF_EST_WAIT:
        return s.est_wait
    return budget_left(st, k, slot)   # SF_BUDGET_LEFT


cdef inline double est_lambda(Stage* s) noexcept nogil:
    if not s.est_has_gap or s.est_gap <= 0:
        return 0.0
    return 1.0 / s.est_gap


cdef inline double est_rho(Stage* s) noexcept nogil:
    return fmin(est_lambda(s) * s.est_service, 0.99)


cdef double price(Stage* s, double s_hit, double ds) noexcept nogil:
    cdef double lam = est_lambda(s), rho = est_rho(s), w = s.est_wait
    cdef double s_miss = s_hit + ds
    return ds + lam * (s_miss * s_miss - s_hit * s_hit) / (2.0 * (1.0 - rho)) + lam * w * ds / (1.0 - rho)


cdef double pool_fn(State* st, int fn, int32_t k, int slot) noexcept nogil:
    return pool_value(st, &st.pools[k], fn, slot)


cdef inline double pool_value(State* st, Pool* p, int fn, int slot) noexcept nogil:
    """Pool function fn of pool p, for the session in `slot` (inline: a caller passing a constant
    fn reads the one field)."""
    cdef int64_t e
    if fn == PF_USED:
        return p.used
    if fn == PF_FREE:
        return p.cap - p.used          # cached units are not subtracted
    if fn == PF_HOLDERS:
        return <double> p.nholders
    if fn == PF_QUEUED:
        return <double> p.qlen
    if slot < 0:                       # PF_CACHED_IN: the session's own cached units
        return 0.0
    e = own_entry(p, st.sess.serial[slot])
    return p.entries[e].size if e >= 0 else 0.0


cdef inline double attr_value(State* st, int slot, int32_t a) noexcept nogil:
    """Attribute a of the session in `slot` (an ended session's snapshot while attr_row is set; NaN
    without a session)."""
    if st.attr_row != NULL:
        return st.attr_row[a]
    return st.sess.attrs[<int64_t> slot * st.n_attrs + a] if slot >= 0 else NAN


cdef inline double ctx_value(State* st, int32_t x, double present) noexcept nogil:
    if x == CTX_NOW:
        return st.now
    if x == CTX_PRESENT:
        return present
    return st.ctxv[x]


cdef inline double since_value(State* st, const int32_t* c, int slot) noexcept nogil:
    """The value of an XS_SINCE expression whose code starts at c: `now - attribute`."""
    return st.now - attr_value(st, slot, c[0 + XONE_LEN + XONE_ARG])


cdef inline double draw1_value(State* st, const int32_t* c, sq_rng* rng) noexcept nogil:
    """The value of an XS_DRAW1 expression whose code starts at c: a draw with one constant argument."""
    if c[0 + XONE_LEN + XSAMPLE_DIST] == SQ_DIST_EXP:       # sq_draw's case for it, inline (`~exp(1)`)
        return sq_draw_exp(rng, &st.consts[c[0 + XONE_ARG]])
    return sq_draw(rng, c[0 + XONE_LEN + XSAMPLE_DIST], &st.consts[c[0 + XONE_ARG]])


cdef inline double draw2_value(State* st, const int32_t* c, sq_rng* rng) noexcept nogil:
    """The value of an XS_DRAW2 expression whose code starts at c: a draw with two constant arguments."""
    cdef double args[2]
    args[0] = st.consts[c[0 + XONE_ARG]]
    args[1] = st.consts[c[0 + XONE_LEN + XONE_ARG]]
    return sq_draw(rng, c[2 * XONE_LEN + XSAMPLE_DIST], args)


cdef inline bint draw2_h2(State* st, const int32_t* c, sq_h2* h) noexcept nogil:
    """Whether the XS_DRAW2 expression whose code starts at c is an h2 draw; if so its phases, for
    sq_draw_h2_of (which then draws what draw2_value would)."""
    cdef double args[2]
    if c[2 * XONE_LEN + XSAMPLE_DIST] != SQ_DIST_H2:
        return False
    args[0] = st.consts[c[0 + XONE_ARG]]
    args[1] = st.consts[c[0 + XONE_LEN + XONE_ARG]]
    h[0] = sq_h2_of(args)
    return True


cdef inline bint is_leaf(int32_t op) noexcept nogil:
    return op == X_NUM or op == X_ATTR or op == X_CTX


cdef inline double num_value(State* st, const int32_t* c) noexcept nogil:
    """The value of the X_NUM instruction at c."""
    return st.consts[c[0 + XONE_ARG]]


cdef inline double leaf_value(State* st, const int32_t* c, int slot, double present) noexcept nogil:
    """The value of the leaf instruction at c (X_NUM, X_ATTR or X_CTX)."""
    if c[0] == X_NUM:
        return num_value(st, c)
    if c[0] == X_ATTR:
        return attr_value(st, slot, c[0 + XONE_ARG])
    return ctx_value(st, c[0 + XONE_ARG], present)


# The shapes most expressions have, which `evaluate` computes without the stack machine (the same
# operations in the same order). Each expression's shape is decided once per run (expr_shapes, at
# set-up), not recognised word by word at every evaluation.
cdef enum ExprShape:
    XS_VM = 0          # anything else: the stack machine
    XS_NUM             # a constant
    XS_ATTR            # an attribute
    XS_NOW             # `now`
    XS_CTX             # another context variable
    XS_ADD             # leaf + leaf
    XS_SUB             # leaf - leaf
    XS_MUL             # leaf * leaf
    XS_DIV             # leaf / leaf
    XS_DRAW1           # a draw whose one argument is a constant (`~exp(1)`)
    XS_DRAW2           # a draw whose two arguments are constants (`~h2(1, 4)`)
    XS_SINCE           # `now - attribute`: the time since a stamp (`observe response = now - t0`)
    XS_POOLS_ADD       # pool function + pool function, each of a pool indexed by an attribute: a
                       # router's load (`holders(seqs[r]) + queued(seqs[r])`, r the candidate)


cdef unsigned char expr_shape(const int32_t* c, int64_t n) noexcept nogil:
    """The shape of the expression whose n words start at c (its code runs to its X_RET; n bounds
    what is read). Each word is read only once the ones before it are known to be instructions of
    this expression."""
    cdef int32_t op
    if n < XONE_LEN + X_BARE_LEN or not is_leaf(c[0]):
        return XS_VM
    if c[0 + XONE_LEN] == X_RET:
        if c[0] == X_NUM:
            return XS_NUM
        if c[0] == X_ATTR:
            return XS_ATTR
        return XS_NOW if c[0 + XONE_ARG] == CTX_NOW else XS_CTX
    if c[0 + XONE_LEN] == X_SAMPLE:
        if n >= XONE_LEN + XSAMPLE_LEN + X_BARE_LEN and c[0] == X_NUM \
                and c[0 + XONE_LEN + XSAMPLE_NARGS] == 1 and c[0 + XONE_LEN + XSAMPLE_LEN] == X_RET:
            return XS_DRAW1
        return XS_VM
    if c[0] == X_ATTR and c[0 + XONE_LEN] == X_POOL:
        return pools_add_shape(c, n)
    if not is_leaf(c[0 + XONE_LEN]) or n < 2 * XONE_LEN + X_BARE_LEN:
        return XS_VM
    op = c[2 * XONE_LEN]
    if (op == X_ADD or op == X_SUB or op == X_MUL or op == X_DIV) \
            and n >= 2 * XONE_LEN + 2 * X_BARE_LEN and c[2 * XONE_LEN + X_BARE_LEN] == X_RET:
        if op == X_ADD:
            return XS_ADD
        if op == X_SUB:
            if c[0] == X_CTX and c[0 + XONE_ARG] == CTX_NOW and c[0 + XONE_LEN] == X_ATTR:
                return XS_SINCE
            return XS_SUB
        return XS_MUL if op == X_MUL else XS_DIV
    if op == X_SAMPLE and n >= 2 * XONE_LEN + XSAMPLE_LEN + X_BARE_LEN and c[0] == X_NUM \
            and c[0 + XONE_LEN] == X_NUM and c[2 * XONE_LEN + XSAMPLE_NARGS] == 2 \
            and c[2 * XONE_LEN + XSAMPLE_LEN] == X_RET:
        return XS_DRAW2
    return XS_VM


# XS_POOLS_ADD's code: ATTR POOL ATTR POOL ADD RET, each POOL indexed (by the ATTR before it)
cdef enum:
    XP_POOL1 = XONE_LEN
    XP_ATTR2 = XONE_LEN + XREF_LEN
    XP_POOL2 = 2 * XONE_LEN + XREF_LEN
    XP_ADD = 2 * (XONE_LEN + XREF_LEN)


cdef unsigned char pools_add_shape(const int32_t* c, int64_t n) noexcept nogil:
    """expr_shape of an expression starting with an attribute and a pool function (XS_POOLS_ADD or
    XS_VM), each word read once the ones before it are known to be its instructions."""
    if n < XP_ADD + 2 * X_BARE_LEN or not c[XP_POOL1 + XREF_HAS_INDEX] or c[XP_ATTR2] != X_ATTR \
            or c[XP_POOL2] != X_POOL or not c[XP_POOL2 + XREF_HAS_INDEX] or c[XP_ADD] != X_ADD \
            or c[XP_ADD + X_BARE_LEN] != X_RET:
        return XS_VM
    return XS_POOLS_ADD


cdef inline double pools_add_value(State* st, const int32_t* c, int slot) noexcept nogil:
    """The value of an XS_POOLS_ADD expression whose code starts at c: the stack machine's
    operations in its order (the first index out of range fails the evaluation, NaN)."""
    cdef int64_t k = member(st, attr_value(st, slot, c[0 + XONE_ARG]), c[XP_POOL1 + XREF_COUNT], E_INDEX, slot)
    cdef double a
    if k < 0:
        return NAN
    a = pool_fn(st, c[XP_POOL1 + XREF_FN], <int32_t> (c[XP_POOL1 + XREF_BASE] + k), slot)
    k = member(st, attr_value(st, slot, c[XP_ATTR2 + XONE_ARG]), c[XP_POOL2 + XREF_COUNT], E_INDEX, slot)
    if k < 0:
        return NAN
    return a + pool_fn(st, c[XP_POOL2 + XREF_FN], <int32_t> (c[XP_POOL2 + XREF_BASE] + k), slot)


cdef unsigned char* expr_shapes(State* st, const int32_t* code, int64_t n) noexcept nogil:
    """Every expression's shape, by its entry offset (NULL: out of memory). Expressions are laid
    end to end, each ending in X_RET, so an entry is offset 0 or follows an X_RET word; an operand
    that happens to equal X_RET only gives a word no evaluation starts at a shape nobody reads."""
    cdef unsigned char* shapes = <unsigned char*> plan_table(st, n + 1, 1, TABLE_ZERO)
    cdef int64_t off
    if shapes == NULL:
        return NULL
    for off in range(n):
        if off == 0 or code[off - 1] == X_RET:
            shapes[off] = expr_shape(code + off, n - off)
    return shapes


cdef double evaluate(State* st, int32_t off, int slot, sq_rng* rng, double present) noexcept nogil:
    """Run one expression's bytecode; attributes read NaN without a session (slot -1).

    The shapes most expressions have (ExprShape, decided at set-up) are computed here without the
    stack machine, with the same operations in the same order. A step stage's cost has its own
    shape: `evaluate_cost`."""
    cdef const int32_t* c = st.code + off
    cdef unsigned char shape = st.shapes[off]
    if shape == XS_NOW:
        return st.now
    elif shape == XS_NUM:
        return num_value(st, c)
    elif shape == XS_ATTR:
        return attr_value(st, slot, c[0 + XONE_ARG])
    elif shape == XS_CTX:
        return ctx_value(st, c[0 + XONE_ARG], present)
    elif shape == XS_ADD:
        return leaf_value(st, c, slot, present) + leaf_value(st, c + <int32_t> XONE_LEN, slot, present)
    elif shape == XS_SUB:
        return leaf_value(st, c, slot, present) - leaf_value(st, c + <int32_t> XONE_LEN, slot, present)
    elif shape == XS_SINCE:
        return since_value(st, c, slot)
    elif shape == XS_MUL:
        return leaf_value(st, c, slot, present) * leaf_value(st, c + <int32_t> XONE_LEN, slot, present)
    elif shape == XS_DIV:
        return leaf_value(st, c, slot, present) / leaf_value(st, c + <int32_t> XONE_LEN, slot, present)
    elif shape == XS_DRAW1:
        return draw1_value(st, c, rng)
    elif shape == XS_DRAW2:
        return draw2_value(st, c, rng)
    return evaluate_vm(st, off, slot, rng, present)


# the cost shape's postfix code, L0 L1 L2 L3 op1 op2 L4 L5 op3 op4 op5 RET: each instruction's offset
cdef enum:
    CS_L1 = XONE_LEN
    CS_L2 = 2 * XONE_LEN
    CS_L3 = 3 * XONE_LEN
    CS_OP1 = 4 * XONE_LEN
    CS_OP2 = CS_OP1 + X_BARE_LEN
    CS_L4 = CS_OP2 + X_BARE_LEN
    CS_L5 = CS_L4 + XONE_LEN
    CS_OP3 = CS_L5 + XONE_LEN
    CS_OP4 = CS_OP3 + X_BARE_LEN
    CS_OP5 = CS_OP4 + X_BARE_LEN
    CS_RET = CS_OP5 + X_BARE_LEN


cdef inline const double* leaf_address(State* st, const int32_t* c) noexcept nogil:
    """Where leaf_value(st, c, -1, present) reads the leaf at c when that is one fixed place for
    the whole run (a constant, or a context variable but `present`); else NULL."""
    if c[0] == X_NUM:
        return &st.consts[c[0 + XONE_ARG]]
    if c[0] == X_CTX and c[0 + XONE_ARG] != CTX_PRESENT:
        return &st.now if c[0 + XONE_ARG] == CTX_NOW else &st.ctxv[c[0 + XONE_ARG]]
    return NULL


# the linear shape's postfix code, L0 L1 L2 MUL ADD RET
cdef enum:
    CL_L1 = XONE_LEN
    CL_L2 = 2 * XONE_LEN
    CL_OP1 = 3 * XONE_LEN
    CL_OP2 = CL_OP1 + X_BARE_LEN
    CL_RET = CL_OP2 + X_BARE_LEN


# The shapes of a step stage's cost that evaluate_cost computes without the stack machine
# (Stage.cost_shape, decided at set-up), with the same operations in the same order
cdef enum CostShape:
    COST_VM = 0        # any other cost
    COST_ROOFLINE      # L0 + max(L1 * (L2 + L3), L4 * L5): `step0 + max(kvread * (kv_decode + kv_prefill), tok * tokens)`
    COST_LINEAR        # L0 + L1 * L2: `0.01 + 0.0001 * tokens` (only when cost_direct: else the stack machine)


cdef inline int cost_shape(const int32_t* c) noexcept nogil:
    """The CostShape of the cost expression at c. Each word is read only once the ones before it
    are known to be instructions of this expression."""
    if not (is_leaf(c[0]) and is_leaf(c[CS_L1]) and is_leaf(c[CS_L2])):
        return COST_VM
    if c[CL_OP1] == X_MUL and c[CL_OP2] == X_ADD and c[CL_RET] == X_RET:
        return COST_LINEAR
    if (is_leaf(c[CS_L3]) and c[CS_OP1] == X_ADD and c[CS_OP2] == X_MUL and is_leaf(c[CS_L4])
            and is_leaf(c[CS_L5]) and c[CS_OP3] == X_MUL and c[CS_OP4] == X_MAX and c[CS_OP5] == X_ADD
            and c[CS_RET] == X_RET):
        return COST_ROOFLINE
    return COST_VM


cdef inline double evaluate_cost(State* st, Stage* s) noexcept nogil:
    """A step stage's cost, in its iteration's moment: its shape (CostShape) without the stack
    machine; kept out of `evaluate`, whose fast paths every other expression pays for."""
    cdef const int32_t* c = st.code + s.cost_e
    if s.cost_direct:       # the same, each leaf read where set-up found it (step_cost_leaves)
        if s.cost_shape == COST_LINEAR:
            return s.cost_leaf[0][0] + s.cost_leaf[1][0] * s.cost_leaf[2][0]
        return s.cost_leaf[0][0] + fmax(s.cost_leaf[1][0] * (s.cost_leaf[2][0] + s.cost_leaf[3][0]),
                                        s.cost_leaf[4][0] * s.cost_leaf[5][0])
    if s.cost_shape == COST_ROOFLINE:
        return leaf_value(st, c, -1, NAN) + fmax(
            leaf_value(st, c + <int32_t> CS_L1, -1, NAN)
            * (leaf_value(st, c + <int32_t> CS_L2, -1, NAN) + leaf_value(st, c + <int32_t> CS_L3, -1, NAN)),
            leaf_value(st, c + <int32_t> CS_L4, -1, NAN) * leaf_value(st, c + <int32_t> CS_L5, -1, NAN))
    return evaluate(st, s.cost_e, -1, &st.rng_session, NAN)


cdef double evaluate_vm(State* st, int32_t off, int slot, sq_rng* rng, double present) noexcept nogil:
    """The stack machine: any expression (evaluate's shapes too)."""
    cdef const int32_t* c = st.code
    cdef int64_t base = st.stack_top
    cdef double* s = st.stack + base     # a nested evaluation (budget_left) stacks above this one
    cdef int64_t sp = 0
    cdef int32_t pc = off, op, has_index
    cdef int64_t k
    cdef double a, b
    if st.shapes[off] == XS_POOLS_ADD:
        # (tested here, not in evaluate, whose chain of shapes is inlined where it is called)
        return pools_add_value(st, c + off, slot)
    while True:
        op = c[pc]
        if op == X_NUM:
            s[sp] = st.consts[c[pc + XONE_ARG]]
            sp += 1
            pc += XONE_LEN
        elif op == X_ATTR:
            s[sp] = attr_value(st, slot, c[pc + XONE_ARG])
            sp += 1
            pc += XONE_LEN
        elif op == X_CTX:
            s[sp] = ctx_value(st, c[pc + XONE_ARG], present)
            sp += 1
            pc += XONE_LEN
        elif op == X_NEG:
            s[sp - 1] = -s[sp - 1]
            pc += X_BARE_LEN
        elif op == X_NOT:
            s[sp - 1] = 1.0 if s[sp - 1] == 0.0 else 0.0
            pc += X_BARE_LEN
        elif op == X_TRUTH:
            s[sp - 1] = 1.0 if s[sp - 1] != 0.0 else 0.0
            pc += X_BARE_LEN
        # one branch per binary operator, all `op == constant`: Cython compiles the chain to one C switch
        elif op == X_ADD:
            sp -= 1
            s[sp - 1] = s[sp - 1] + s[sp]
            pc += X_BARE_LEN
        elif op == X_SUB:
            sp -= 1
            s[sp - 1] = s[sp - 1] - s[sp]
            pc += X_BARE_LEN
        elif op == X_MUL:
            sp -= 1
            s[sp - 1] = s[sp - 1] * s[sp]
            pc += X_BARE_LEN
        elif op == X_DIV:
            sp -= 1
            s[sp - 1] = s[sp - 1] / s[sp]
            pc += X_BARE_LEN
        elif op == X_POW:
            sp -= 1
            s[sp - 1] = pow(s[sp - 1], s[sp])
            pc += X_BARE_LEN
        elif op == X_LT:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] < s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_LE:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] <= s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_GT:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] > s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_GE:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] >= s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_EQ:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] == s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_NE:
            sp -= 1
            s[sp - 1] = 1.0 if s[sp - 1] != s[sp] else 0.0
            pc += X_BARE_LEN
        elif op == X_AND:
            if s[sp - 1] == 0.0:
                s[sp - 1] = 0.0
                pc = c[pc + XONE_ARG]
            else:
                sp -= 1
                pc += XONE_LEN
        elif op == X_OR:
            if s[sp - 1] != 0.0:
                s[sp - 1] = 1.0
                pc = c[pc + XONE_ARG]
            else:
                sp -= 1
                pc += XONE_LEN
        elif op == X_JZ:
            sp -= 1
            if s[sp] == 0.0:
                pc = c[pc + XONE_ARG]
            else:
                pc += XONE_LEN
        elif op == X_JMP:
            pc = c[pc + XONE_ARG]
        elif op == X_FN1:
            a = s[sp - 1]
            k = c[pc + XONE_ARG]
            if k == FN_ABS:
                a = fabs(a)
            elif k == FN_FLOOR:
                a = floor(a)
            elif k == FN_CEIL:
                a = ceil(a)
            elif k == FN_SQRT:
                a = sqrt(a)
            elif k == FN_EXP:
                a = exp(a)
            elif k == FN_LN:
                a = log(a)
            elif k == FN_SIN:
                a = sin(a)
            else:
                a = cos(a)          # FN_COS
            s[sp - 1] = a
            pc += XONE_LEN
        elif op == X_MIN:
            sp -= 1
            s[sp - 1] = fmin(s[sp - 1], s[sp])
            pc += X_BARE_LEN
        elif op == X_MAX:
            sp -= 1
            s[sp - 1] = fmax(s[sp - 1], s[sp])
            pc += X_BARE_LEN
        elif op == X_STAGE or op == X_POOL:
            has_index = c[pc + XREF_HAS_INDEX]
            k = 0
            if has_index:
                sp -= 1
                k = member(st, s[sp], c[pc + XREF_COUNT], E_INDEX, slot)
                if k < 0:
                    return NAN
            if op == X_STAGE:
                st.stack_top = base + sp + 1
                if c[pc + XREF_FN] == SF_BUDGET_LEFT \
                        and st.stack_top + st.stage_needs[c[pc + XREF_BASE] + k] > st.stack_cap:
                    # budget_left evaluates the stage's budget and chunk above this slot, with what
                    # they call in turn; lowering sizes the stack for the deepest chain: never reached
                    fail(st, E_NESTING, slot, 0, c[pc + XREF_BASE] + k, 0)
                    st.stack_top = base
                    return NAN
                a = stage_fn(st, c[pc + XREF_FN], <int32_t> (c[pc + XREF_BASE] + k), slot)
                st.stack_top = base
                s[sp] = a
            else:
                s[sp] = pool_fn(st, c[pc + XREF_FN], <int32_t> (c[pc + XREF_BASE] + k), slot)
            sp += 1
            pc += XREF_LEN
        elif op == X_PRICE:
            has_index = c[pc + XPRICE_HAS_INDEX]
            k = 0
            if has_index:
                sp -= 1
                k = member(st, s[sp], c[pc + XPRICE_COUNT], E_INDEX, slot)
                if k < 0:
                    return NAN
            sp -= 1
            s[sp - 1] = price(&st.stages[c[pc + XPRICE_BASE] + k], s[sp - 1], s[sp])
            pc += XPRICE_LEN
        elif op == X_SAMPLE:
            k = c[pc + XSAMPLE_NARGS]
            sp -= k
            s[sp] = sq_draw(rng, c[pc + XSAMPLE_DIST], &s[sp])
            sp += 1
            pc += XSAMPLE_LEN
        else:  # X_RET
            return s[sp - 1]
