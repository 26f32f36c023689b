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

cdef struct Area:
    # a step function's integral: integral += value * (now - last) at every sample
    double value
    double last
    double integral

cdef struct Event:
    double t
    int64_t seq
    int32_t kind
    int32_t a        # stage
    int64_t b        # job slot
    int64_t c        # job id (fifo/delay) or epoch (ps)

cdef struct DArr:
    double* p
    int64_t n
    int64_t cap

cdef struct LArr:
    int64_t* p
    int64_t n
    int64_t cap

cdef struct Running:
    # a Welford mean kept instead of the samples: d = x - mean; mean += d / n
    int64_t n
    double mean

cdef struct Serials:
    # sessions' serials, 4 bytes each while they fit, widened to 8 bytes for good past 2^31 - 1
    int32_t* p32
    int64_t* p64
    int64_t n
    int64_t cap

cdef struct Turns:
    # turn numbers (a record saturates them to u32); NULL while every one so far is 0,
    # which is all of them in a single-turn program
    uint32_t* p
    int64_t n
    int64_t cap

cdef struct PsEntry:
    double tag
    int64_t id
    int32_t job

cdef struct Stage:
    int32_t kind
    int32_t servers
    int32_t phi          # expression offset of a ps stage's φ
    int dirty            # ps: φ and the next finish are due (reschedule, at settle)
    int64_t n            # jobs present
    int64_t busy         # fifo: servers in use
    # fifo waiting line: a ring of job slots
    int32_t* q
    int64_t qcap
    int64_t qhead
    int64_t qlen
    # ps: virtual time, its rate, the epoch that makes older finishes stale
    double V
    double Vt
    double rate
    double phi_k
    int64_t epoch
    PsEntry* heap
    int64_t hlen
    int64_t hcap
    # time averages and completion samples
    Area number
    Area busy_area
    Running waits
    Running services
    # a shared stage (chapter 06): its constant capacity (0: not shared) and the rates of its flows
    double share_cap
    double rate_sum
    # step stages: expressions, serve policy, memory pool, residents, the in-flight iteration
    int32_t budget_e
    int32_t chunk_e
    int32_t cost_e
    int cost_shape              # the cost's form (CostShape: the stack machine, or a shape over leaves; evaluate_cost)
    bint cost_direct            # ... a shape whose every leaf is read in one fixed place, cost_leaf[i] (step_cost_leaves)
    const double* cost_leaf[6]
    bint budget_fixed           # the budget (chunk) is a constant, budget_k (chunk_k): step_budget, step_chunk
    bint chunk_fixed
    double budget_k
    double chunk_k
    int excl
    int32_t serve_start
    int32_t serve_count
    int32_t memory
    int32_t* res             # resident job slots, in admission order
    int64_t nres
    int64_t res_cap
    # residents before `cursor` are served in the planning pass (set to 0 as a pass starts, kept so
    # as residents join and leave), so a pass in resident order costs O(residents), not O(residents²)
    int64_t cursor
    int inflight
    bint iter_left           # a resident left (leave_residents) since this iteration's planning began
    int64_t iter_epoch
    int32_t* a_job           # the iteration's assignment: job slot, job id, tokens
    int64_t* a_id
    double* a_tok
    int64_t na
    int64_t a_cap
    int iter_kind            # 1 prefill only, 2 decode only, 3 mixed, 0 none
    int64_t iter_decodes
    int64_t iterations
    Area prefill_only
    Area decode_only
    Area mixed
    Area decodes
    Running decode_batch
    Running decode_step
    # per iteration started warm: scheduled tokens / budget (a finite positive budget only), jobs served
    Running budget_use
    Running batch
    Histogram itl           # inter-token gaps, as the report's histogram (nothing is kept per token)
    # online estimators (est_lambda, est_rho, est_wait, price)
    int64_t est_count
    double est_last_start
    double est_gap
    double est_service
    double est_wait
    int est_has_gap
    bint phi_fixed       # a ps stage's φ is one constant, phi_k (decided at set-up: constant_at)

cdef struct Entry:
    # a cached prefix: the session's own (keyed by its serial) or a dead one (nobody's, keyed
    # DEAD_KEY + n for the run's n-th), evicted by (last, seq) under lru, else by the pool's keys
    # read on the live session or this snapshot of it. A spilled piece joins the tier's entry
    # with the same key, so a dead entry's pieces meet again there.
    int64_t key
    int32_t slot
    double* snap
    double size
    double last
    int64_t seq
    int64_t at              # its place in the pool's lru heap (lru pools only)

cdef struct Pool:
    double cap
    double block            # 0: none
    double used
    double cached
    # holders: session slots, one per admission (nested holds appear twice), in admission order.
    # A release removes all of a session's entries at once by moving its generation on, which
    # leaves them stale in place (skipped, and squeezed out once they are half the array).
    int32_t* holders
    uint32_t* holders_gen   # the session's generation when the entry was pushed
    int64_t nholders        # live entries
    int64_t holders_len     # entries in the array, stale ones included
    int64_t holders_cap
    int32_t* queue          # waiting session slots, in the order they joined (= queue_base + qhead)
    int64_t qlen
    int64_t qcap
    # the allocation behind `queue`: taking the head moves `queue` on instead of shifting
    # every waiting hold, so a fifo admission is O(1)
    int32_t* queue_base
    int64_t qhead
    int32_t* growers        # sessions waiting to grow, FIFO
    int64_t ngrowers
    int64_t growers_cap
    int32_t spill_to        # `spill TIER via LINK (work) when (pred)`: -1 none
    int32_t spill_via
    int32_t spill_work
    int32_t spill_when
    int64_t spills
    int overfull            # a release cached more than it freed and left the pool over its cap
    int lifo                # `preempt lifo`
    int engine              # some step stage has it as `memory`: victims come from its residents
    int64_t preemptions
    int64_t stuck
    int32_t evict_start     # `evict by` keys (0 keys: lru)
    int32_t evict_count
    int32_t key_start       # `queue by` keys (0 keys: fifo)
    int32_t key_count
    Entry* entries
    int64_t nentries
    int64_t entries_cap
    # lru pools: a binary min-heap of entry indices by (last, seq); each entry knows its place,
    # so evicting, touching and removing an entry cost O(log entries)
    int64_t* lru
    # entry key -> its index (open addressing, linear probing, backward-shift deletion), so
    # finding a session's own entry costs O(1) instead of a scan of every entry
    int64_t* own_keys         # key + 1; 0 marks an empty bucket
    int64_t* own_rows
    int64_t own_cap           # a power of two, or 0 before the first entry
    Area used_area
    Area cached_area
    Area queue_area
    Area holders_area
    double mid_queue           # queue_area's integral over [warmup, mid] (see State.mid_time)
    Running waits
    int64_t admissions
    int64_t evicted_entries
    double evicted_units
    int64_t rejected

cdef struct Timeline:
    # the trace-event file a run streams (sq/engine/_timeline.pxi); only events overlapping [t0, t1]
    void* f                   # the C FILE*, open for writing
    double t0
    double t1
    int64_t lanes_per_stage   # stage k's lane l is thread k * lanes_per_stage + l + 1
    const char** stage_names  # labels, for the lanes a run opens
    const char** pool_names
    char** lane_busy          # per stage: whether each of its lanes serves a job now
    int64_t* nlanes
    int64_t* job_lane         # per job slot: the lane its service runs on
    int64_t job_cap
    double* pool_last         # per pool: used, cached, queue as last written
    int counters_started
    # per session slot (grown with the sessions): when it arrived, its open turn
    double* sess_start
    double* turn_start
    int64_t* turn_no
    # per hold frame (slot * depth + d): when its wait and its hold began (NaN: none open)
    double* wait_start
    double* hold_start
    int64_t cap               # session slots the arrays above cover

cdef struct Observe:
    # one row per sample in each of the four (they grow together: one count for all)
    DArr values
    DArr times
    Serials serials
    Turns turns
    int64_t room            # rows `record` may add without growing, widening or storing a turn (0: none)
    Summary summary         # instead of the four above when the run keeps no samples

cdef struct Gauge:
    int32_t expr
    DArr times
    DArr values
    Fold fold               # instead of times and values when the run keeps no samples

cdef struct Sessions:
    # per session slot (struct of arrays; slots reused). Every table here is grown and freed by
    # session_tables (sq/engine/_session.pxi), the one list of them; spawn sets a slot's starting values
    # (reset_extras those only hold and step code read or change).
    int64_t cap                 # slots allocated
    int64_t high                # slots ever used
    int32_t* spare              # ended slots, reused first
    int64_t nspare
    double* attrs               # [slot * n_attrs + a]
    int32_t* pc
    int64_t* serial             # the arrival serial (records carry it even if `serial` is set)
    char* alive
    # open holds: a stack of frames per session (depth × pools per hold; D = hold_depth_max,
    # P = hold_pools_max)
    int32_t* depth              # per session: open holds
    int32_t* frame_hold         # [slot*D + d]: hold id
    double* frame_queued_at     # [slot*D + d]
    int32_t* frame_member       # [(slot*D + d)*P + i]: the pool row
    double* frame_alloc
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
    int64_t* lease_tail
    int32_t* job                # per session: its current stage job (-1: none)
    int32_t* flow               # per session: its flow (-1: none)
    int32_t* itl_stage          # per session: the stage of its previous token
    char* itl_has               # per session: token bookkeeping for inter-token gaps
    double* itl_last
    double* itl_turn
    char* itl_decoded
    char* itl_preempted         # per session: preempted since its last token
    int64_t* trace_of           # per session: its corpus session (trace replay)
    int64_t* trace_next         # per session: the next turn to load

cdef struct Jobs:
    # stage jobs (struct of arrays; slots reused, a finish event names slot and id)
    int64_t cap
    int64_t high
    int32_t* spare
    int64_t nspare
    int32_t* owner              # the session slot
    int32_t* stage
    int64_t* id                 # -1: a free slot
    double* work
    double* enq
    double* start
    double* end
    char* started
    int32_t* mode
    int32_t* growing            # the job's `growing` pool row (-1: none)
    int64_t* served             # the serving pass that last served the job
    # a step job's owner cannot open or close a hold while the job is resident (it waits in the
    # `run`; a preemption removes the job), so its frame entries are found once, when it joins:
    int64_t* frame              # the owner's innermost open frame entry on `growing` (-1: none)
    int64_t* units_at           # its only open frame entry on the stage's memory (-1: none, -2: several)
    char* decoding              # a step job one of whose decode tokens was its owner's last token (token_again)

cdef struct Leases:
    # hold allocations kept after the body. Rows of ended leases are reused (a generation makes
    # their pending end events stale); each session links its own in lease order (Sessions'
    # lease_head/lease_tail), so ending or finding them costs what the session has, not what
    # the run had.
    int64_t n
    int64_t cap
    int64_t* spare              # ended rows, reused first
    int64_t nspare
    int64_t next_gen
    int32_t* slot
    int32_t* row
    double* alloc
    double* computed
    int32_t* cache
    char* active
    int64_t* gen
    int64_t* next               # the session's next lease (-1: none)
    int64_t* prev

cdef struct Flows:
    # flows over shared stages (chapter 06; struct of arrays, slots reused)
    int32_t max_st              # the most stages one flow holds
    int maxmin                  # max-min fair sharing (else proportional)
    int64_t n
    int64_t cap
    int32_t* spare
    int64_t nspare
    int32_t* stage              # [f * max_st + i]
    int32_t* nst
    double* rem
    double* rate
    double* start
    int64_t* id
    int32_t* owner
    char* active
    char* frozen
    int32_t* order              # the active flows' slots in id order (0.1.2 sums their rates so)
    int64_t norder
    double last
    int finite                  # every shared stage's capacity is finite: so is every flow's rate
    int64_t epoch
    int dirty
    char* touched               # per stage: a flow started, ended or left it since the last recompute
    double* left                # per stage, while rates are recomputed
    double* rising
    int32_t* scratch            # the stages of a flow being started

cdef struct Traces:
    # the iteration trace (only when asked): per iteration its time and entry count, per entry
    # serial, turn_no, mode and tokens, in serving order
    int iters
    DArr it_time
    LArr it_count
    LArr it_serial
    LArr it_turn
    LArr it_mode
    DArr it_tokens
    # the eviction trace (only when asked): per evicted piece its time, entry key and units
    int evicts
    DArr ev_time
    LArr ev_key
    DArr ev_units

cdef struct RunFault:
    # the first run-time error (RunError in sq/_engine.pyx): code, where, and what
    int code                    # E_NONE: none
    int64_t serial
    double time
    double value
    double value2
    double value3
    int64_t a
    int64_t b

cdef struct Lone:
    # a program that is one open queue (sq/engine/_one_queue.pxi): sessions that stamp `now`, run at one
    # fifo, ps or delay stage, observe the time since and end; lone_plan sets these at set-up
    int32_t stage              # the stage (-1: not such a program, the general loop runs it)
    int32_t run_pc             # the session's `run`
    int32_t after_pc           # the statement after it: the observes, then the end
    int32_t n_observes         # observes of `now - <a stamp of the arrival>` after the run
    int32_t work               # the run's work: an expression of constants and draws (code offset)

cdef struct State:
    # the lowered program
    const int32_t* code
    const double* consts
    const int32_t* stmts
    int64_t n_code             # words in `code`
    unsigned char* shapes      # per code word: the ExprShape of the expression entered there (expr_shapes)
    unsigned char* forms       # per statement word: the StmtForm of the statement there (stmt_forms)
    int32_t n_attrs
    int32_t slot_serial
    int32_t slot_turn
    int32_t slot_cached
    int32_t slot_computed
    double ctxv[N_CONTEXTS]            # context variables of the moment being evaluated (by IR id)
    double* attr_row           # when set, attributes are read here (an ended session's snapshot)
    const int32_t* hold_pcs
    int32_t n_holds            # hold statements: without any, no session holds, grows, leases or is preempted
    int iter_preempted         # a preemption happened during the current start_iteration
    int pools_evict_by         # some pool evicts by keys: entries keep snapshots
    sq_rng rng_eviction
    int32_t init_pc
    int32_t turn_pc
    int32_t session_pc
    int32_t max_keys
    int32_t n_stages
    int32_t n_ps_first         # the first ps or step stage (n_stages: none), where settle's pass starts
    int32_t n_ps_end           # one past the last ps or step stage, where it ends
    int32_t n_step_end         # one past the last step stage (0: none): a ps stage before it
                               # is rescheduled only once the pass has read pending_now
    int32_t ps_lone            # the one ps stage when settle's passes are its alone (no pools, no
                               # other ps or step stage), else -1: settle checks it inline
    int32_t n_pools
    int32_t n_observes
    int32_t n_gauges
    const double* pool_caps
    int32_t arrival_kind
    double arrival_rate
    int64_t arrival_count
    int32_t arrival_gap
    double horizon
    double warmup
    int64_t limit              # arrivals N (0: none)
    # clock, events
    double now
    int warm
    int64_t seq
    Event* heap
    int64_t hlen
    int64_t hcap
    # the next open arrival: at most one is pending, so it waits here, not in the heap
    # (next_event takes the earlier of the two by (t, seq); seq NO_EVENT: none pending)
    Event arrival
    # an event scheduled before every event in the heap waits here, out of it (seq NO_EVENT:
    # none): a step stage's next iteration end most often is the earliest, and a heap of
    # think times would move it up and down through every level
    Event soon
    int64_t events
    # counters
    int64_t arrivals
    int64_t ended
    int64_t turns
    int64_t live
    int64_t next_serial
    int64_t next_job_id
    Area live_area
    # steady-state check: the live and pool-queue integrals over [warmup, mid_time], the middle of
    # the measured window, and the arrivals before warmup
    double mid_time
    int mid_taken
    double mid_live
    int64_t warm_arrivals      # arrivals before warmup ended
    Sessions sess
    int32_t hold_depth_max     # open holds one session can have at once (D)
    int32_t hold_pools_max     # pools one hold can take (P)
    Leases leases
    double* scratch           # units and reserves of one admission attempt (2 per pool)
    const int32_t* holds
    const int32_t* hold_offsets
    const int32_t* pool_keys
    Pool* pools
    # Idle declarations cost nothing per event: settle's pools pass and the area samples visit
    # only the rows these bit sets name (rows_new: a summary word per 4096 rows over the row words). Each is a superset: a bit is set
    # where the row can leave its idle state, and cleared when a visit finds the row idle.
    uint64_t* pools_waiting    # a pool that may have waiting holds or growers
    uint64_t* pools_sampled    # a pool whose used, cached, queue or holders may be nonzero
    uint64_t* stages_sampled   # a stage whose areas may be nonzero (step and shared stages: always)
    int64_t next_entry_seq
    int64_t next_dead          # dead entries made so far (their keys follow DEAD_KEY)
    # step stages
    const int32_t* serve_keys
    const int32_t* admit_via   # per pool: the stage whose iterations admit it (-1: settle)
    double next_adm
    int64_t serve_stamp
    int kv_budget              # set_totals makes the kvb/kvp sums (an expression but a cost reads them)
    int kv_iteration           # start_iteration makes them (some expression reads them)
    int budget_totals          # set_totals makes any total (an expression but a cost reads one)
    int estimates              # complete_job keeps the stages' estimators (some expression reads them)
    int session_extras         # some hold or step stage: spawn resets what only their code reads (reset_extras)
    int32_t bl_stage           # during an admission by this step stage, budget_left reads bl_value
    double bl_value
    Traces traces
    Timeline* tl              # NULL unless the run writes a timeline
    Flows flows
    # trace replay: the corpus, and each session's corpus session and next turn
    const double* trace_turns     # 4 per turn: new, out, think, forced
    const int64_t* trace_start    # per corpus session: its first turn
    const int64_t* trace_len
    int64_t trace_sessions        # 0: no trace
    int trace_ordered
    int32_t slot_new
    int32_t slot_out
    int32_t slot_think
    int32_t slot_forced
    int32_t slot_more
    sq_rng rng_trace
    # ready queue: its head in `ready_first` (slot + 1; 0: none) when it was pushed to an empty
    # queue, then a ring of session slots (most instants ready one session: no ring traffic)
    int32_t ready_first
    int32_t* ready
    int64_t rcap
    int64_t rhead
    int64_t rlen
    Jobs jobs
    # tables
    Stage* stages
    Observe* observes
    Gauge* gauges
    # expression stack (nested evaluations stack above stack_top) and choose scratch
    double* stack
    int64_t stack_top
    int64_t stack_cap          # slots in `stack`
    const int64_t* stage_needs # per stage: the slots a call of budget_left(it) needs above the call
    double* keys
    # streams
    sq_rng rng_arrival
    sq_rng rng_workload
    sq_rng rng_session
    # guard against instants that never end
    int64_t steps
    int64_t step_limit
    int64_t max_memory         # bytes the growing tables may take (E_MEMORY_LIMIT past it)
    int64_t mem_bytes          # what they take (counted where they grow)
    bint check                # debug mode: re-check invariants after every event
    int32_t spill_depth
    RunFault error
    Lone lone
    # long runs (_long.pxi): samples kept or summarized; polled between instants for signals,
    # the wall-clock limit and progress
    int keep_samples
    int64_t poll_at            # poll when `events` reaches this
    int64_t poll_every
    double poll_wall           # the monotonic clock at the last poll (s)
    double poll_python         # when Python is next asked (signals, progress)
    double wall_deadline       # the monotonic time the run must stop by (0: none)
    int stop                   # why the run stopped early (0: it did not)
    # the stall guard (_long.pxi): where the current window of STALL_WINDOW events began
    int64_t stall_at           # check when `events` reaches this
    int64_t stall_events
    double stall_time
    int stall_windows          # consecutive windows at a pace the horizon cannot be reached at
    void* poller               # the Python object asked every ~50 ms (borrowed)
