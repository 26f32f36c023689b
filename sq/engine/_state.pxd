# C-level layout of the engine's run state (sq/_engine.pyx).
#
# Everything the event loop touches lives in these structs, allocated once
# from the lowered tables and grown geometrically; the loop itself runs
# without the GIL and never touches a Python object.
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from sq.engine._random cimport sq_rng
from sq.results._itl cimport Histogram
from sq.lower._bytecode cimport N_CONTEXTS
from sq.results._sketch cimport Summary, Fold

cdef extern from *:
    """
    /* no bytes, aligned to a 64-byte line: a struct whose first field it is starts a line (and
       its size is a multiple of 64), so that the fields together at its start share few lines.
       (Not an aligned scalar type for that first field: Cython gives its temporaries the field's
       type, and a function holding an over-aligned local realigns its stack at every call.) */
    typedef struct {} __attribute__((aligned(64))) sq_line;
    """
    ctypedef struct line_start "sq_line":
        pass

cdef struct Area:
    # a step function's integral: integral += value * (now - last) at every sample
    double value               # the step function's current value
    double last                # when it was last sampled (simulated time)
    double integral            # value × time so far (since warmup)

cdef struct Lag:
    # one family's samples (the pools', or the stages') deferred for rows that did not change: the
    # gap (now - the previous sample) of each sample since the log began (see _loop.pxi, sample_pool)
    double* gap                # LAG_CAP gaps (simulated time), each twice side by side (lag_tick)
    int64_t n                  # gaps logged
    double at                  # when the family was last sampled (simulated time)

cdef struct Event:
    double t                   # when it happens (simulated time)
    int64_t seq                # schedule order: breaks ties in t (schedule writes both)
    int32_t kind               # an EventKind (EV_ARRIVE ... EV_FLOW_END, sq/_engine.pyx)
    int32_t a        # stage
    int64_t b        # job slot
    int64_t c        # job id (fifo/delay) or epoch (ps)

cdef struct FifoEnd:
    # an event of fifo_loop's own heap (sq/engine/_one_queue.pxi): an Event's time and seq, and
    # which event it is, in 24 bytes to the Event's 40 (the heap's sifts move less)
    double t
    int64_t seq
    int64_t row                # a server's row (its finish), or -1 - i: fifo_loop's other event i

cdef struct DArr:
    double* p                  # the values (malloc'd; darr_push grows it geometrically, sq/engine/_arrays.pxi)
    int64_t n                  # values held
    int64_t cap                # values `p` has room for

cdef struct LArr:
    int64_t* p                 # the values (malloc'd; larr_push grows it, sq/engine/_arrays.pxi)
    int64_t n                  # values held
    int64_t cap                # values `p` has room for

cdef struct Running:
    # a Welford mean kept instead of the samples: d = x - mean; mean += d / n
    int64_t n                  # samples folded in
    double mean                # their mean so far

cdef struct Serials:
    # sessions' serials, 4 bytes each while they fit, widened to 8 bytes for good past 2^31 - 1
    int32_t* p32               # the serials while all fit in 4 bytes (NULL once widened)
    int64_t* p64               # the serials once one did not (NULL before)
    int64_t n                  # serials held
    int64_t cap                # serials the array has room for

cdef struct Turns:
    # turn numbers (a record saturates them to u32); NULL while every one so far is 0,
    # which is all of them in a single-turn program
    uint32_t* p                # the turn numbers (NULL: all 0 so far)
    int64_t n                  # turn numbers held (rows of the observe)
    int64_t cap                # turn numbers `p` has room for

cdef struct PsEntry:
    double tag                 # the virtual time V at which the job's work is done (the heap's order)
    int64_t id                 # the job's id (a stale entry's id no longer matches its slot)
    int32_t job                # the job slot

cdef struct Assigned:
    # one entry of a step iteration's assignment: its fields together, as the plan writes them and
    # the iteration's end reads them, resident after resident
    int64_t id                 # the job's id when planned (a job removed meanwhile has another,
                               # or a free slot's -1)
    double tok                 # tokens scheduled
    int32_t job                # the job slot

cdef struct KeptPlan:
    # what step_again's kept plan of a step stage carries to its quiet repeats (_loop.pxi): outside
    # Stage, whose size the one-replica rows feel; one line a stage (`line`: _set_stages
    # allocates them so), which a quiet repeat reads after the other replicas' work evicted it
    line_start line            # (no bytes: KeptPlan starts a line; _set_stages allocates them so)
    double kvb                 # the KV sums of the plan replica_begin made last (or a repeat with
    double kvm                 # a grow made afresh)
    double used                # with grants: the pool's `used` as this stage's last plan or repeat left it
    double duration            # the cost of the stage's last iteration step_again began
    double tokens_at           # when every resident's last token came, where a quiet repeat began the
                               # iteration running (replica_quiet; NaN after a plan: not known)
    int32_t pool               # the pool every growing resident grows on, where the quiet count has
                               # grants (-1: it has none)

cdef struct Stage:
    # A step stage's quiet repeat (step_again, replica_quiet, iteration_begins: _loop.pxi,
    # _step.pxi) reads and writes these first fields of its Stage and no other: with R replicas
    # a stage's record is touched once in ~R events, after the other replicas' work has evicted
    # it from L1, so each 64-byte line they span is a miss (the week: ~2 an event where they
    # were spread over eight lines). Stage starts a line (`line`; _set_stages
    # allocates them so), and these fill its first, second, fourth and fifth: the histogram
    # starts 48 bytes into the second, so what a token's gap reads of it (n and total, its
    # first fields; last_gap and last_cell, its last) falls in the second and the fourth, and
    # its buckets (low, top, cells) fill the third.
    line_start line            # (no bytes: Stage starts a line; _set_stages allocates them so)
    int64_t iter_epoch         # bumped per iteration; the EV_ITER_END event carries it (older: stale)
    # step_again (_loop.pxi) began this stage's iteration by plan_again, and no resident has joined
    # or left since (join_residents, leave_residents, leave_marked; start_iteration clears it too):
    # its next plan_unchanged reads only what an iteration moves (again), or none is made while
    # `quiet` (that plan's count of repeats planned the same with no grow due) lasts
    int64_t quiet
    Assigned* assigned         # the iteration's assignment, in serving order (as it ends, the jobs
                               # it finishes are listed at its front: end_iteration)
    int64_t na                 # entries in the assignment
    int64_t iterations         # iterations started (the report's count)
    int64_t iter_decodes       # decode tokens in the running iteration (the decodes area's value while it runs)
    int inflight               # an iteration is running (set by start_iteration, cleared at its end)
    bint plan_kept             # (see quiet)
    int iter_kind              # 1 prefill only, 2 decode only, 3 mixed, 0 none
    bint cost_repeats          # the cost is cost_direct and every leaf a constant or an iteration
                               # total: the same totals, the same cost (steady_run)
    # (the second line)
    Area decode_only           # 1 while a decode-only iteration runs
    Area decodes               # decode tokens in the running iteration, over time
    Histogram itl              # inter-token gaps, as the report's histogram (nothing is kept per token)
    # (after the histogram: the fourth line from its nk on, and the fifth)
    double budget_k            # the constant budget (tokens) when budget_fixed
    Running decode_batch       # per iteration with decodes: decode tokens in it
    Running decode_step        # per iteration with decodes: its duration (simulated time)
    # per iteration started warm: scheduled tokens / budget (a finite positive budget only), jobs served
    Running budget_use
    Running batch
    # what the quiet repeats do not read
    int32_t kind               # K_FIFO, K_PS, K_DELAY or K_STEP (set at set-up from the lowered table)
    int32_t servers            # fifo: servers (c); set at set-up
    int32_t phi          # expression offset of a ps stage's φ
    int dirty            # ps: φ and the next finish are due (reschedule, at settle)
    int64_t n            # jobs present
    int64_t busy         # fifo: servers in use
    # fifo waiting line: a ring of job slots
    int32_t* q                 # fifo: waiting job slots, a ring
    int64_t qcap               # fifo: slots `q` has room for
    int64_t qhead              # fifo: the ring's head
    int64_t qlen               # fifo: jobs waiting
    # ps: virtual time, its rate, the epoch that makes older finishes stale
    double V                   # ps: virtual time (work done per job so far), as of Vt
    double Vt                  # ps: the time V was last brought up to date (V(now) = V + rate * (now - Vt))
    double rate                # ps: dV/dt, φ / n as last rescheduled
    double phi_k               # ps: φ when phi_fixed
    int64_t epoch              # ps: bumped at each reschedule; a finish event carrying an older one is stale
    PsEntry* heap              # ps: present jobs, a min-heap by tag
    int64_t hlen               # ps: jobs in the heap
    int64_t hcap               # ps: entries `heap` has room for
    # time averages and completion samples
    Area number                # jobs present (n) over time (the report's mean number)
    Area busy_area             # servers busy over time (utilization)
    int64_t lag_at             # the stage family's gaps already added to number and busy (-1: sampled
                               # at its next visit, not deferred; see Lag)
    Running waits              # per completed job: time from enqueue to start (simulated time)
    Running services           # per completed job: time from start to end
    # a shared stage (chapter 06): its constant capacity (0: not shared) and the rates of its flows
    double share_cap           # shared: its capacity (0: not shared)
    double rate_sum            # shared: its flows' rates summed (recompute writes it)
    # step stages: expressions, serve policy, memory pool, residents, the in-flight iteration
    int32_t budget_e           # the token budget's expression offset (step_budget)
    int32_t chunk_e            # the prefill chunk's expression offset (step_chunk)
    int32_t cost_e             # the iteration cost's expression offset (its duration, simulated time)
    int cost_shape              # the cost's form (CostShape: the stack machine, or a shape over leaves; evaluate_cost)
    bint cost_direct            # ... a shape whose every leaf is read in one fixed place, cost_leaf[i] (step_cost_leaves)
    # (the 4-byte fields below in pairs, so that Stage has no hole: 768 bytes, 12 lines)
    int excl                   # exclusive serving: an iteration with a prefill serves no decode (set at set-up)
    const double* cost_leaf[6]
    bint budget_fixed           # the budget (chunk) is a constant, budget_k (chunk_k): step_budget, step_chunk
    bint chunk_fixed           # (see budget_fixed)
    double chunk_k             # the constant chunk (tokens) when chunk_fixed
    int32_t serve_start        # first `serve by` key in serve_keys
    int32_t serve_count        # `serve by` keys (0: residents in admission order)
    int32_t* res             # resident job slots, in admission order
    int64_t nres               # residents
    int64_t res_cap            # slots `res` has room for
    # residents before `cursor` are served in the planning pass (set to 0 as a pass starts, kept so
    # as residents join and leave), so a pass in resident order costs O(residents), not O(residents²)
    int64_t cursor             # (see above)
    # While an in-order pass plans (`pass_open`), the residents it has served are those before the
    # cursor, until a resident joins before it (an admission the pass ran, admitted no later than a
    # served one): from then on (`stamped`) the pass tells them by their stamps (Jobs.served), as
    # a `serve by` pass always does. Most passes see no such join and write no stamp.
    bint pass_open             # (see above)
    bint stamped               # (see above)
    bint iter_left           # a resident left (leave_residents) since this iteration's planning began
    int32_t memory             # the pool row the stage's residents hold (-1: none)
    int64_t a_cap              # entries the assignment arrays have room for
    Area prefill_only          # 1 while a prefill-only iteration runs (area: its share of time)
    Area mixed                 # 1 while a mixed iteration runs
    # online estimators (est_lambda, est_rho, est_wait, price)
    int64_t est_count          # completions estimate() has seen
    double est_last_start      # the last completed job's start time
    double est_gap             # EWMA of the gaps between completed jobs' starts (simulated time; est_lambda = 1 / it)
    double est_service         # EWMA of completed jobs' service times
    double est_wait            # EWMA of completed jobs' waits
    int est_has_gap            # est_gap holds a value (from the second completion on)
    bint phi_fixed       # a ps stage's φ is one constant, phi_k (decided at set-up: constant_at)

cdef struct Entry:
    # a cached prefix: the session's own (keyed by its serial) or a dead one (nobody's, keyed
    # DEAD_KEY + n for the run's n-th), evicted by (last, seq) under lru, else by the pool's keys
    # read on the live session or this snapshot of it. A spilled piece joins the tier's entry
    # with the same key, so a dead entry's pieces meet again there.
    int64_t key                # the session's serial, or DEAD_KEY + n
    int32_t slot               # the owning session's slot (its attributes are read for `evict by`)
    double* snap               # a dead entry's attribute snapshot (evict-by pools only; NULL otherwise)
    double size                # cached units
    double last                # when it was last touched (simulated time; lru order)
    int64_t seq                # touch order: breaks ties in last
    int64_t at              # its place in the pool's lru heap (lru pools only)

cdef struct Pool:
    double cap                 # capacity (units; set at set-up)
    double block            # 0: none
    double used                # units held by admitted holds now
    double cached              # units held by cached entries now (sum of their sizes)
    # holders: session slots, one per admission (nested holds appear twice), in admission order.
    # A release removes all of a session's entries at once by moving its generation on, which
    # leaves them stale in place (skipped, and squeezed out once they are half the array).
    int32_t* holders           # (see above)
    uint32_t* holders_gen   # the session's generation when the entry was pushed
    int64_t nholders        # live entries
    int64_t holders_len     # entries in the array, stale ones included
    int64_t holders_cap        # entries the holders arrays have room for
    int32_t* queue          # waiting session slots, in the order they joined (= queue_base + qhead)
    int64_t qlen               # waiting holds
    int64_t qcap               # entries `queue_base` has room for
    # the allocation behind `queue`: taking the head moves `queue` on instead of shifting
    # every waiting hold, so a fifo admission is O(1)
    int32_t* queue_base        # (see above)
    int64_t qhead              # waiting holds taken from the front of queue_base
    int32_t* growers        # sessions waiting to grow, FIFO
    int64_t ngrowers           # sessions in `growers`
    int64_t growers_cap        # entries `growers` has room for
    int32_t spill_to        # `spill TIER via LINK (work) when (pred)`: -1 none
    int32_t spill_via          # the link stage the spill runs at (-1: none)
    int32_t spill_work         # the spill's work (expression offset)
    int32_t spill_when         # the spill's predicate (expression offset)
    int64_t spills             # pieces spilled to the tier
    int overfull            # a release cached more than it freed and left the pool over its cap
    int lifo                # `preempt lifo`
    int engine              # some step stage has it as `memory`: victims come from its residents
    int64_t preemptions        # preemptions (victims taken) in this pool
    int64_t stuck              # sessions preempted twice at one position (counted once each, preempt)
    int32_t evict_start     # `evict by` keys (0 keys: lru)
    int32_t evict_count        # (see evict_start)
    int32_t key_start       # `queue by` keys (0 keys: fifo)
    int32_t key_count          # (see key_start)
    Entry* entries
    int64_t nentries           # cached entries
    int64_t entries_cap        # entries `entries` has room for
    # lru pools: a binary min-heap of entry indices by (last, seq); each entry knows its place,
    # so evicting, touching and removing an entry cost O(log entries)
    int64_t* lru               # (see above)
    # entry key -> its index (open addressing, linear probing, backward-shift deletion), so
    # finding a session's own entry costs O(1) instead of a scan of every entry
    int64_t* own_keys         # key + 1; 0 marks an empty bucket
    int64_t* own_rows          # per bucket: the entry's index
    int64_t own_cap           # a power of two, or 0 before the first entry
    Area used_area             # used over time
    Area cached_area           # cached over time
    Area queue_area            # waiting holds over time
    Area holders_area          # live holders over time
    int64_t lag_at             # the pool family's gaps already added to its four areas (-1: see Stage.lag_at)
    double mid_queue           # queue_area's integral over [warmup, mid] (see State.mid_time)
    Running waits              # per admission: time from joining the queue to admission (simulated time)
    int64_t admissions         # holds admitted
    int64_t evicted_entries    # cached entries evicted
    double evicted_units       # cached units evicted
    int64_t rejected           # holds that can never fit (the session ends instead of waiting)

cdef struct Timeline:
    # the trace-event file a run streams (sq/engine/_timeline.pxi); only events overlapping [t0, t1]
    void* f                   # the C FILE*, open for writing
    double t0                  # the window's start (simulated time)
    double t1                  # its end
    int64_t lanes_per_stage   # stage k's lane l is thread k * lanes_per_stage + l + 1
    const char** stage_names  # labels, for the lanes a run opens
    const char** pool_names
    char** lane_busy          # per stage: whether each of its lanes serves a job now
    int64_t* nlanes            # per stage: its lanes opened so far
    int64_t* job_lane         # per job slot: the lane its service runs on
    int64_t job_cap            # job slots `job_lane` covers
    double* pool_last         # per pool: used, cached, queue as last written
    int counters_started       # the pools' counter tracks have been written once
    # per session slot (grown with the sessions): when it arrived, its open turn
    double* sess_start         # (see above)
    double* turn_start         # (see above)
    int64_t* turn_no           # (see above)
    # per hold frame (slot * depth + d): when its wait and its hold began (NaN: none open)
    double* wait_start         # (see above)
    double* hold_start         # (see above)
    int64_t cap               # session slots the arrays above cover

cdef struct Observe:
    # one row per sample in each of the four (they grow together: one count for all)
    DArr values
    DArr times
    Serials serials
    Turns turns
    int64_t room            # rows `record` may add without growing, widening or storing a turn (0: none)
    # Welford's mean and M2 of the values so far, as they are recorded (the report's mean and cv2
    # when it keeps every value: sq.results.stats.welford's steps, off the report's critical path)
    double mean, m2
    Summary summary         # instead of the four above when the run keeps no samples

cdef struct Gauge:
    int32_t expr               # the sampled expression (code offset)
    DArr times                 # sample times (simulated time)
    DArr values                # the values sampled
    Fold fold               # instead of times and values when the run keeps no samples

cdef struct Sessions:
    # per session slot (struct of arrays; slots reused). Every table here is grown and freed by
    # session_tables (sq/engine/_session.pxi), the one list of them; spawn sets a slot's starting values
    # (reset_extras those only hold and step code read or change).
    int64_t cap                 # slots allocated
    int64_t high                # slots ever used
    int32_t* spare              # ended slots, reused first
    int64_t nspare             # slots in `spare`
    double* attrs               # [slot * n_attrs + a]
    int32_t* pc                # per session: the statement it runs next (offset in stmts)
    int64_t* serial             # the arrival serial (records carry it even if `serial` is set)
    char* alive                # per session: 1 while it has not ended
    # open holds: a stack of frames per session (depth × pools per hold; D = hold_depth_max,
    # P = hold_pools_max)
    int32_t* depth              # per session: open holds
    int32_t* frame_hold         # [slot*D + d]: hold id
    double* frame_queued_at     # [slot*D + d]
    int32_t* frame_member       # [(slot*D + d)*P + i]: the pool row
    double* frame_alloc        # [(slot*D + d)*P + i]: units allocated in that pool
    char* frame_active          # still holds that pool (a `release` clears it)
    double* frame_pos           # the computed position (starts at the prefix consumed)
    char* frame_grown           # a `load` moved the position: the computed extent is pos, not alloc
    double* grow_units          # per session: units a waiting `grow` asks for
    int64_t* grow_at            # per session: the frame entry that grows
    int32_t* grow_job           # per session: the resident job whose growth waits (-1: a statement)
    char* waiting               # per session: waiting in a pool's queue
    char* resumed               # per session: re-queued at the front after a preemption
    double* adm                 # per session: its latest admission number (+inf before any)
    char* stuck                 # per session: counted stuck once
    double* ppos                # per session × pool: position at the last preemption (NaN: none)
    int32_t* hcount             # per session × pool: its live entries in the pool's holders
    uint32_t* hgen              # per session × pool: the generation its live holders entries carry
    char* pools_touched         # per session: its ppos/hcount rows may differ from NaN/0 (reset at spawn)
    int64_t* lease_head         # per session: its first and last open lease (-1: none)
    int64_t* lease_tail        # (see lease_head)
    int32_t* job                # per session: its current stage job (-1: none)
    int32_t* flow               # per session: its flow (-1: none)
    int32_t* itl_stage          # per session: the stage of its previous token
    char* itl_has               # per session: token bookkeeping for inter-token gaps
    double* itl_last           # per session: its previous token's time
    double* itl_turn           # per session: the turn of its previous token
    char* itl_decoded          # per session: a decode token came this turn
    char* itl_preempted         # per session: preempted since its last token
    int64_t* trace_of           # per session: its corpus session (trace replay)
    int64_t* trace_next         # per session: the next turn to load

cdef struct JobRec:
    # a job's fields the step engine reads at each resident's visit, in one record: a visit's
    # loads come off one pointer (the per-resident loops ran short of registers for six tables)
    double work                # work left, in the stage's units (step: tokens to schedule)
    int64_t id                 # -1: a free slot
    int64_t frame              # the owner's innermost open frame entry on `growing` (-1: none; see Jobs)
    int32_t owner              # the session slot
    int32_t mode               # M_PLAIN, M_PREFILL or M_DECODE (a step job's phase)
    int32_t growing            # the job's `growing` pool row (-1: none)
    char decoding              # a step job one of whose decode tokens was its owner's last token (end_iteration)

cdef struct Jobs:
    # stage jobs (struct of arrays, and the records; slots reused, a finish event names slot and id)
    int64_t cap                # slots allocated
    int64_t high               # slots ever used
    int32_t* spare             # ended slots, reused first
    int64_t nspare             # slots in `spare`
    JobRec* rec                # owner, id, work, mode, growing, frame, decoding (JobRec)
    int32_t* stage             # the stage it runs at
    double* enq                # when it joined the stage (simulated time)
    double* start              # when its service started
    double* end                # when its service ends (fifo/delay: set as it starts, start + work)
    char* started              # its service has started
    int64_t* served             # the serving pass that last served the job (stamped passes only: Stage.stamped)
    # a step job's owner cannot open or close a hold while the job is resident (it waits in the
    # `run`; a preemption removes the job), so its frame entries are found once, when it joins
    # (rec.frame, and:)
    int64_t* units_at           # its only open frame entry on the stage's memory (-1: none, -2: several)

cdef struct Leases:
    # hold allocations kept after the body. Rows of ended leases are reused (a generation makes
    # their pending end events stale); each session links its own in lease order (Sessions'
    # lease_head/lease_tail), so ending or finding them costs what the session has, not what
    # the run had.
    int64_t n                  # rows ever used
    int64_t cap                # rows allocated
    int64_t* spare              # ended rows, reused first
    int64_t nspare             # rows in `spare`
    int64_t next_gen           # the generation the next lease gets
    int32_t* slot              # the session slot that owns it
    int32_t* row               # the pool row it holds
    double* alloc              # units it holds
    double* computed           # the computed extent it caches on release
    int32_t* cache             # the hold's cache mode at release
    char* active               # still holding (ended leases are 0)
    int64_t* gen               # its generation (its end event carries it; older: stale)
    int64_t* next               # the session's next lease (-1: none)
    int64_t* prev              # the session's previous lease (-1: none)

cdef struct Flows:
    # flows over shared stages (chapter 06; struct of arrays, slots reused)
    int32_t max_st              # the most stages one flow holds
    int maxmin                  # max-min fair sharing (else proportional)
    int64_t n                  # slots ever used
    int64_t cap                # slots allocated
    int32_t* spare             # ended slots, reused first
    int64_t nspare             # slots in `spare`
    int32_t* stage              # [f * max_st + i]
    int32_t* nst               # per flow: the stages it holds
    double* rem                # per flow: work left, as of `last`
    double* rate               # per flow: its current rate (work per unit time)
    double* start              # per flow: when it started (simulated time)
    int64_t* id                # per flow: its id (a finish event checks it)
    int32_t* owner             # per flow: the session slot
    char* active               # per flow: running
    char* frozen               # per flow, while rates are recomputed: its rate is settled
    int32_t* order              # the active flows' slots in id order (0.1.2 sums their rates so)
    int64_t norder             # flows in `order`
    double last                # when rem was last brought up to date (simulated time)
    int finite                  # every shared stage's capacity is finite: so is every flow's rate
    int64_t epoch              # bumped at each recompute; an EV_FLOW_END carrying an older one is stale
    int dirty                  # rates must be recomputed before the next event (settle)
    char* touched               # per stage: a flow started, ended or left it since the last recompute
    double* left                # per stage, while rates are recomputed
    double* rising             # per stage, while rates are recomputed: the sum of the rising flows' weights
    int32_t* scratch            # the stages of a flow being started

cdef struct Traces:
    # the iteration trace (only when asked): per iteration its time and entry count, per entry
    # serial, turn_no, mode and tokens, in serving order
    int iters                  # the iteration trace is on
    DArr it_time
    LArr it_count
    LArr it_serial
    LArr it_turn
    LArr it_mode
    DArr it_tokens
    # the eviction trace (only when asked): per evicted piece its time, entry key and units
    int evicts                 # the eviction trace is on
    DArr ev_time
    LArr ev_key
    DArr ev_units

cdef struct RunFault:
    # the first run-time error (RunError in sq/_engine.pyx): code, where, and what
    int code                    # E_NONE: none
    int64_t serial             # the session it happened in (-1: none)
    double time                # when (simulated time)
    double value               # the offending values (what each means depends on code)
    double value2              # (see value)
    double value3              # (see value)
    int64_t a                  # the construct's ids (a stage, pool, statement ...; by code)
    int64_t b                  # (see a)

cdef struct Lone:
    # a program that is one open queue (sq/engine/_one_queue.pxi): sessions that stamp `now`, run at one
    # fifo, ps or delay stage, observe the time since and end; lone_plan sets these at set-up
    int32_t stage              # the stage (-1: not such a program, the general loop runs it)
    int32_t run_pc             # the session's `run`
    int32_t after_pc           # the statement after it: the observes, then the end
    int32_t n_observes         # observes of `now - <a stamp of the arrival>` after the run
    int32_t work               # the run's work: an expression of constants and draws (code offset)
    int32_t to_run             # the session's statements through its run (its stamps and the run)
    bint fifo                  # the stage is fifo: fifo_loop runs it (no gauge reads the job tables it
                               # leaves unwritten: `work(…)`, the one that would, is refused in a gauge)
    bint ps                    # the stage is ps: ps_loop runs it (sq/engine/_one_ps.pxi; the same holds)

cdef enum:
    SPARE_TABLES = 48          # the most tables a kept family's layout lists (sessions have 36)
    SPARE_FAMILIES = 4         # sessions, jobs, leases, flows

cdef struct Spare:
    # a family's tables (sq/engine/_arrays.pxi, "families of tables") kept from an earlier run on
    # this thread, for the next run to grow into instead of allocating (see resize)
    void* family               # the family (its Family function; NULL: a place not taken yet)
    char* block                # its first table (NULL: none kept)
    int64_t cap                # slots its tables have room for
    int32_t n                  # tables in the layout
    size_t sizes[SPARE_TABLES] # each table's bytes a slot, in the family's order (the layout)
    int64_t slot_bytes         # what one slot takes in the layout (sizes summed)
    # the run's: where the State keeps the family's first table (NULL until the family's first
    # growth in the run), and whether its layout is `sizes` (spare_take notes both)
    void** first
    bint same

cdef enum:
    SAMPLE_SPARES = 8          # the most sample buffers a thread keeps (SampleSpares)

cdef struct SampleSpares:
    # buffers of an earlier run's sample arrays on this thread, freed by the copy into the slab
    # that handed their samples to numpy (_adopt): the next run's observes start in them
    # (_set_observations) instead of growing from nothing (a short run's ~9 reallocs)
    int32_t n
    void* p[SAMPLE_SPARES]
    size_t bytes[SAMPLE_SPARES]

cdef enum:
    PLAN_TABLES = 32           # the most tables a run's set-up makes (PlanTables; it makes 23)

cdef struct PlanTables:
    # the set-up's tables (plan_table, in the order it makes them), kept on the thread for its next
    # run of the same plan (the _Kept's, which holds the plan): n kept, `used` by the run so far
    int32_t n
    int32_t used
    void* block[PLAN_TABLES]
    size_t bytes[PLAN_TABLES]
    int how[PLAN_TABLES]       # how each was made (TABLE_RAW, _ZERO, _LINES): a block is given again
                               # only to a table asked for the same way (a line-aligned one stays so)

cdef struct State:
    # the lowered program
    const int32_t* code        # expression words (the lowered program's; set at set-up, read only)
    const double* consts       # the constant table expressions index
    const int32_t* stmts       # statement words
    int64_t n_code             # words in `code`
    unsigned char* shapes      # per code word: the ExprShape of the expression entered there (expr_shapes)
    unsigned char* forms       # per statement word: the StmtForm of the statement there (stmt_forms)
    int32_t n_attrs            # attributes per session (the row width of sess.attrs)
    int32_t slot_serial        # the attribute slot of `serial` (spawn writes it)
    int32_t slot_turn          # the attribute slot of the turn number
    int32_t slot_cached        # the attribute slot `cached` (admission writes the prefix consumed)
    int32_t slot_computed      # the attribute slot `computed` (a preemption writes the position)
    double ctxv[N_CONTEXTS]            # context variables of the moment being evaluated (by IR id)
    double* attr_row           # when set, attributes are read here (an ended session's snapshot)
    const int32_t* hold_pcs    # per hold id: its statement's offset
    int32_t n_holds            # hold statements: without any, no session holds, grows, leases or is preempted
    int iter_preempted         # a preemption happened during the current start_iteration
    int pools_evict_by         # some pool evicts by keys: entries keep snapshots
    sq_rng rng_eviction        # the stream eviction draws (and spill predicates) use
    int32_t init_pc            # the init block's first statement
    int32_t turn_pc            # the turn block's first statement (-1: none)
    int32_t session_pc         # the session block's first statement
    int32_t max_keys           # the most `queue by` / `evict by` / `serve by` keys one construct has (sizes `keys`)
    int32_t n_stages           # stages
    int32_t n_ps_first         # the first ps or step stage (n_stages: none), where settle's pass starts
    int32_t n_ps_end           # one past the last ps or step stage, where it ends
    int32_t n_step_end         # one past the last step stage (0: none): a ps stage before it
                               # is rescheduled only once the pass has read pending_now
    int32_t ps_lone            # the one ps stage when settle's passes are its alone (no pools, no
                               # other ps or step stage), else -1: settle checks it inline
    int32_t step_lone          # the one step stage when it is the stages pass alone (no ps or
                               # other step stage), else -1: settle_passes visits it directly
    int32_t steady_stage       # step_lone when steady decode runs are enabled (steady_run), else -1
    int64_t steady_repeats     # iterations steady_run repeated without the event list (tests read it)
    bint steps_again           # steps_only and steady runs enabled: an iteration end may take step_again
    int64_t steps_repeated     # iterations step_again began without settle (tests read it)
    int64_t quiet_fused        # iterations quiet_repeat planned with the end before them (tests read it)
    int32_t n_pools            # pools
    int32_t n_observes         # observes
    int32_t n_gauges           # gauges
    const double* pool_caps    # per pool: its capacity (units)
    int32_t arrival_kind       # A_POISSON, A_RENEWAL, A_BATCH or A_CLOSED (A_NONE: no arrivals)
    double arrival_rate        # poisson: arrivals per unit time
    int64_t arrival_count      # batch / closed: the sessions started
    int32_t arrival_gap        # renewal: the gap's expression offset
    double horizon             # the run's end (simulated time)
    double warmup              # when measuring starts (simulated time)
    int64_t limit              # arrivals N (0: none)
    # clock, events
    double now                 # the current simulated time (next_event advances it)
    int warm                   # warmup has ended: measurements count
    int64_t seq                # events scheduled so far (the next event's seq)
    Event* heap                # pending events by (t, seq): sorted, or a binary min-heap (heaped)
    int64_t hlen               # events in the heap
    int64_t hcap               # events `heap_room` has room for
    Event* heap_room           # the allocation `heap` lies in: sorted, a taken top moves `heap` on
    bint heaped                # the event list is a heap (long), not sorted (short: the first)
    # the next open arrival: at most one is pending, so it waits here, not in the heap
    # (next_event takes the earlier of the two by (t, seq); seq NO_EVENT: none pending)
    Event arrival
    # an event scheduled before every event in the heap waits here, out of it (seq NO_EVENT:
    # none): a step stage's next iteration end most often is the earliest, and a heap of
    # think times would move it up and down through every level
    Event soon
    int64_t events             # events handled
    # counters
    int64_t arrivals           # sessions arrived
    int64_t ended              # sessions ended
    int64_t turns              # turns started
    int64_t live               # sessions alive now
    int64_t next_serial        # the serial the next arrival gets
    int64_t next_job_id        # the id the next stage job gets
    Area live_area             # live sessions over time
    # steady-state check: the live and pool-queue integrals over [warmup, mid_time], the middle of
    # the measured window, and the arrivals before warmup
    double mid_time            # the middle of [warmup, horizon] (simulated time)
    int mid_taken              # mid_time has been reached and the integrals at it taken
    double mid_live            # live_area's integral over [warmup, mid_time]
    int64_t warm_arrivals      # arrivals before warmup ended
    Sessions sess              # per-session tables
    int32_t hold_depth_max     # open holds one session can have at once (D)
    int32_t hold_pools_max     # pools one hold can take (P)
    Leases leases              # hold allocations kept after their body
    double* scratch           # units and reserves of one admission attempt (2 per pool)
    const int32_t* holds       # hold table words (pools, amounts, options per hold)
    const int32_t* hold_offsets   # per hold id: its words' offset in `holds`
    const int32_t* pool_keys   # the pools' `queue by` / `evict by` key expressions
    Pool* pools                # per pool (n_pools rows)
    # Idle declarations cost nothing per event: settle's pools pass and the area samples visit
    # only the rows these bit sets name (rows_new: a summary word per 4096 rows over the row words). Each is a superset: a bit is set
    # where the row can leave its idle state, and cleared when a visit finds the row idle.
    uint64_t* pools_waiting    # a pool that may have waiting holds or growers
    uint64_t* pools_sampled    # a pool whose used, cached, queue or holders may be nonzero
    uint64_t* stages_sampled   # a stage whose areas may be nonzero (step and shared stages: always)
    # which sampled rows changed since the family's last sample (one bit a row, laid out as the row
    # words of pools_sampled and stages_sampled, no summary): the others' samples are deferred
    uint64_t* pools_touched    # a pool whose used, cached, queue or holders changed (touch_pool)
    uint64_t* stages_touched   # a step stage whose number changed (the other stages are tested: see step_rows)
    uint64_t* step_rows        # the step stages (not shared): whether each stage's changes are touched
    uint64_t* steps_ready      # a step stage that may start an iteration (idle with work): settle_stages
                               # visits only these when its pass holds step stages alone
    bint steps_only            # the stages pass (n_ps_first to n_ps_end) holds step stages alone, more
                               # than one (steps_ready is kept only then)
    KeptPlan* kept             # per stage: step_again's kept plan (replica_begin, replica_quiet)
    Lag pool_lag               # the sampled pools' deferred samples
    Lag stage_lag              # the sampled stages' deferred samples
    int64_t next_entry_seq     # the seq the next cache touch gets (Entry.seq)
    int64_t next_dead          # dead entries made so far (their keys follow DEAD_KEY)
    # step stages
    const int32_t* serve_keys  # the step stages' `serve by` key expressions
    const int32_t* admit_via   # per pool: the stage whose iterations admit it (-1: settle)
    double next_adm            # the admission number the next hold admission gets (sess.adm)
    int64_t serve_stamp        # bumped per serving pass (jobs.served compares to it)
    int kv_budget              # set_totals makes the kvb/kvp sums (an expression but a cost reads them)
    int kv_iteration           # start_iteration makes them (some expression reads them)
    int budget_totals          # set_totals makes any total (an expression but a cost reads one)
    int estimates              # complete_job keeps the stages' estimators (some expression reads them)
    int session_extras         # some hold or step stage: spawn resets what only their code reads (reset_extras)
    int32_t bl_stage           # during an admission by this step stage, budget_left reads bl_value
    double bl_value            # the budget left that budget_left reads during that admission
    Traces traces              # the iteration and eviction traces
    Timeline* tl              # NULL unless the run writes a timeline
    Flows flows                # flows over shared stages
    # trace replay: the corpus, and each session's corpus session and next turn
    const double* trace_turns     # 4 per turn: new, out, think, forced
    const int64_t* trace_start    # per corpus session: its first turn (NULL with trace_len: session t is row t)
    const int64_t* trace_len   # per corpus session: its turns (NULL: one each, a one-turn corpus)
    int64_t trace_sessions        # 0: no trace
    # arrive replay (an extension): each arrival's time and corpus session (sq/traces/replay.py)
    const double* replay_at       # per arrival: its time (simulated time)
    const int64_t* replay_of      # per arrival: its corpus session (NULL: arrival i replays session i)
    int64_t replay_n              # arrivals in the schedule
    int64_t replay_next           # the next arrival to schedule
    int64_t replay_spawned        # arrivals spawned: the next one replays replay_of[replay_spawned]
    # a Markov-modulated poisson (an extension: `poisson(r1, …) leave(q1, …)`)
    const double* mod_rates       # per phase: its arrival rate (per unit time)
    const double* mod_leave       # per phase: the rate it is left at, for the next phase
    int32_t mod_n                 # phases
    int32_t mod_phase             # the phase now (-1: not yet drawn, before the first arrival)
    double mod_until              # when the phase now ends (simulated time)
    # a renewal in a rate's operational time (an extension: `renewal(g) rate(r)`; sq/traces/rate.py)
    const double* op_cum          # Λ at the edges of op_n equal cells of [0, horizon]
    int64_t op_n                  # cells
    double op_width               # a cell's width (simulated time)
    int64_t op_cell               # the cell of the last arrival (the search for the next starts there)
    double op_at                  # Λ at the last arrival (operational time)
    # a trace's prefix cache shared by content id (an extension: `trace "F" prefix(C)`): per corpus
    # turn its blocks as dense ids, and an LRU list over the ids (prev -2: not resident, -1: head)
    const int64_t* pfx_ids        # the turns' blocks, as dense ids, turn after turn
    const int64_t* pfx_off        # per corpus turn: where its blocks start in pfx_ids (one past the last: the end)
    int64_t* pfx_prev             # per id: the previous block in LRU order (prefix_lookup writes both)
    int64_t* pfx_next             # per id: the next block (-1: the tail)
    int64_t pfx_head              # the least recently used block (-1: none)
    int64_t pfx_tail              # the most recently used block (-1: none)
    int64_t pfx_count             # blocks resident
    double pfx_cap                # < 0: no prefix cache
    int32_t slot_hit_blocks       # the attribute slot of a turn's leading blocks found resident
    int32_t slot_prompt_blocks    # the attribute slot of a turn's blocks
    int trace_ordered          # a session's corpus session is serial mod trace_sessions (else a draw on rng_trace)
    int32_t slot_new           # the attribute slot a turn's new tokens are loaded into
    int32_t slot_out           # ... its output tokens
    int32_t slot_think         # ... its think time
    int32_t slot_forced        # ... its forced flag
    int32_t slot_more          # ... 1 while the corpus session has another turn
    sq_rng rng_trace           # the stream that picks corpus sessions
    # ready queue: its head in `ready_first` (slot + 1; 0: none) when it was pushed to an empty
    # queue, then a ring of session slots (most instants ready one session: no ring traffic)
    int32_t ready_first        # (see above)
    int32_t* ready             # the ring of ready session slots (after ready_first)
    int64_t rcap               # slots `ready` has room for
    int64_t rhead              # the ring's head
    int64_t rlen               # slots in the ring
    Jobs jobs                  # stage jobs
    # tables
    Stage* stages              # per stage (n_stages rows)
    Observe* observes          # per observe: its samples or summary
    Gauge* gauges              # per gauge: its samples or fold
    # expression stack (nested evaluations stack above stack_top) and choose scratch
    double* stack              # evaluation slots
    int64_t stack_top          # slots in use
    int64_t stack_cap          # slots in `stack`
    const int64_t* stage_needs # per stage: the slots a call of budget_left(it) needs above the call
    double* keys               # scratch for one key comparison: two rows of max_keys (+ 2) values
    # streams
    sq_rng rng_arrival         # the stream arrivals draw on
    sq_rng rng_workload        # the stream workload draws use
    sq_rng rng_session         # the stream session code draws on
    # guard against instants that never end
    int64_t steps              # statements run in the current instant
    int64_t step_limit         # statements one instant may run before E_STEP_LIMIT
    int64_t max_memory         # bytes the growing tables may take (E_MEMORY_LIMIT past it)
    int64_t mem_bytes          # what they take (counted where they grow)
    bint check                # debug mode: re-check invariants after every event
    int32_t spill_depth        # spills nested inside spills now (guard: at most 64)
    RunFault error             # the first run-time error (the run stops at it)
    Lone lone                  # the one-open-queue fast path's plan
    # long runs (_long.pxi): samples kept or summarized; polled between instants for signals,
    # the wall-clock limit and progress
    int keep_samples           # observes and gauges keep every sample (else summaries)
    int64_t poll_at            # poll when `events` reaches this
    int64_t poll_every         # events between polls
    double poll_wall           # the monotonic clock at the last poll (s)
    double poll_python         # when Python is next asked (signals, progress)
    double wall_deadline       # the monotonic time the run must stop by (0: none)
    int stop                   # why the run stopped early (0: it did not)
    # the stall guard (_long.pxi): where the current window of STALL_WINDOW events began
    int64_t stall_at           # check when `events` reaches this
    int64_t stall_events       # `events` when the window began (stalled writes both)
    double stall_time          # `now` when the window began (simulated time)
    int stall_windows          # consecutive windows at a pace the horizon cannot be reached at
    void* poller               # the Python object asked every ~50 ms (borrowed)
    Spare* spares              # SPARE_FAMILIES places for the families' kept tables (NULL: none kept)
    SampleSpares* sample_spares    # the thread's kept sample buffers (NULL: none kept)
    PlanTables* plan_tables    # the set-up's tables, kept with the thread's last plan (run sets it)
