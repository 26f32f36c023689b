"""Every parse-error class: pyserq 0.1.2 rejects the program, and so do we,
at the same line and column, with a message holding pyserq's wording."""
import re

import pytest

from sq.errors import SqError
from sq.frontend.parser import parse
from tests.helpers.spec_data import PROBES_DIR, probes as spec_probes

pyserq = pytest.importorskip("pyserq")

RUN = "run { horizon 10; }\n"
WL = "workload { arrive batch(1); }\n"
KV = "pool kv { cap 10; }\n"

# (program, phrase both messages must hold)
CASES = [
    # lexical
    (RUN + "session { observe a = 1 /* x", "unterminated block comment"),
    (RUN + "session { observe a = 1 # 2; }", "unexpected character `#`"),
    (RUN + "session { observe a = 1 & 2; }", "unexpected character `&`"),
    (RUN + "session { observe a = 1 | 2; }", "unexpected character `|`"),
    (RUN + "session { observe a = 1.2.3; }", "bad number `1.2.3`"),
    (RUN + "session { observe a = 1 1..2; }", "bad number `1..2`"),
    (RUN + "session { observe a = 1e; }", "expected Semi, found `e`"),
    (RUN + "session { observe a = 2x; }", "expected Semi, found `x`"),
    (RUN + "session { observe a = 0x10; }", "expected Semi, found `x10`"),
    (RUN + "session { observe a = 1 1e20; }", "expected Semi, found 100000000000000000000"),
    (RUN + "session { observe a = 1 1e-7; }", "expected Semi, found 0.0000001"),
    (RUN + "session { observe a = 1 2.50; }", "expected Semi, found 2.5"),
    (RUN + "session { observe a = 1 \"s\"; }", 'expected Semi, found "s"'),
    (RUN + "/* a /* b */ c */", "unexpected `c` at top level"),
    (RUN + "session { observe a = 1 ½; }", "unexpected character `½`"),
    (RUN + "session { observe a = 1 x½; }", "expected Semi, found `x½`"),
    # expressions
    (RUN + "session { observe a = 1 < 2 < 3; }", "expected Semi, found Lt"),
    (RUN + "session { observe a = ~det(2)^2; }", "expected Semi, found Caret"),
    (RUN + "session { observe a = +1; }", "expected an expression, found Plus"),
    (RUN + "session { observe a = min(1, 2,); }", "expected an expression, found RParen"),
    (RUN + "session { observe a = x[1]; }", "expected Semi, found LBracket"),
    (RUN + "session { observe a = min(x[1]+0, 9); }", "expected RParen, found LBracket"),
    (RUN + "session { observe a = x k in 3 (k); }", "expected Semi, found `k`"),
    (RUN + "session { observe a = 1 +; }", "expected an expression, found Semi"),
    (RUN + "session { observe a = (1; }", "expected RParen, found Semi"),
    # top level
    (RUN + "session { observe a = 1; } ;", "unexpected Semi at top level"),
    (RUN + "foo;", "unexpected `foo` at top level"),
    (RUN + "5", "unexpected 5 at top level"),
    (RUN + "let = 3;", "expected identifier, found Assign"),
    (RUN + "let where = 1;", "`where` is a retired word and names nothing"),
    (RUN + "run { speed 1; }", "unknown run option `speed`"),
    (RUN + "run { horizon 1 }", "expected Semi, found RBrace"),
    (RUN + "share foo;", "`share` takes `maxmin` or `bottleneck`, found `foo`"),
    (RUN + "share maxmin;\nshare bottleneck;", "`share` is given twice: the first is on line 2"),
    (RUN + "queue a { nic ps(1); }\nqueue b { nic ps(1); }\nb pull a share maxmin;\nshare maxmin;",
     "`share` is given twice: the pull relation on line 4"),
    (RUN + "queue a { nic ps(1); }\nqueue b { nic ps(1); }\nshare bottleneck;\nb pull a share maxmin;",
     "the program divides shared stages by one policy"),
    # pools and stages
    (RUN + "pool p { capp 3; }", "unknown pool option `capp`"),
    (RUN + "pool p { 3; }", "expected identifier, found 3"),
    (RUN + "pool kv { evict foo; }", "expected `by`, found `foo`"),
    (RUN + "pool kv { preempt foo; }", "expected `none`, found `foo`"),
    (RUN + "pool kv { queue foo; }", "expected `by`, found `foo`"),
    (RUN + "pool kv { admit foo; }", "expected `via`, found `foo`"),
    (RUN + "pool kv { evict by (); }", "expected an expression, found RParen"),
    (RUN + "stage s : ffo;", "unknown stage kind `ffo`"),
    (RUN + "stage s : fifo", "expected Semi, found Eof"),
    (RUN + "stage s : fifo latency 1;", "`latency` belongs to the `serve` of a queue that plays `link`"),
    (RUN + "stage s : step { cost 1; foo 2; }", "unknown step option `foo`"),
    (RUN + "stage s : step { cost 1; 2; }", "expected identifier, found 2"),
    (RUN + "stage s : step { cost 1; decode first; }", "`decode first;` is now `serve decode first;`"),
    (RUN + "stage s : step { cost 1; exclusive prefill; }", "`exclusive prefill;` is now `serve exclusive prefill;`"),
    (RUN + "stage s : step { cost 1; serve only (1); }", "`serve` takes `admission`, `decode first`"),
    (RUN + "stage s : step { cost 1; serve admission; serve admission; }", "`serve` twice: a step stage"),
    (RUN + "stage s : step { cost 1; serve decode last; }", "expected `first`, found `last`"),
    (RUN + "stage s : step { cost 1; memory kv[1]; }", "expected Semi, found LBracket"),
    # array sizes
    (RUN + "pool kv[0] { }", "array size must be a positive integer, found 0"),
    (RUN + "pool kv[0.5] { }", "array size must be a positive integer, found 0.5"),
    (RUN + "pool kv[-1] { }", "array size must be a positive integer, found -1"),
    (RUN + "pool kv[0/0] { }", "array size must be a positive integer, found NaN"),
    (RUN + "pool kv[1/0] { }", "array size must be a positive integer, found inf"),
    (RUN + "pool kv[10001] { }", "array size 10001 is more than a family holds (10000)"),
    (RUN + "pool kv[N] { }\nlet N = 2;", "array size must be a positive integer or a `let` constant"),
    (RUN + "let N = serial; pool kv[N] { }", "array size must be a positive integer or a `let` constant"),
    (RUN + "pool kv[sum k in 3 (k)] { }", "array size must be a positive integer or a `let` constant"),
    # workload
    (RUN + "workload { observe a = 1; }", "unexpected `observe` in workload"),
    (RUN + "workload { 5 }", "unexpected 5 in workload"),
    (RUN + "workload { arrive foo(1); }", "expected `none`, found `foo`"),
    (RUN + "workload { arrive poisson 1; }", "expected LParen, found 1"),
    (RUN + "workload { trace foo; }", "expected string, found `foo`"),
    (RUN + "workload { hidden ; }", "expected identifier, found Semi"),
    (RUN + WL + "workload { }", "duplicate workload"),
    (RUN + "workload { session { } session { } }", "duplicate session in workload"),
    (RUN + WL + "session { observe a = 1; } session { }", "duplicate session"),
    (RUN + "workload { session { } }\nsession { observe a = 1; }", "a program has one session"),
    (RUN + "server { } server { }", "duplicate server"),
    (RUN + "workload { session { request; } }\nserver { turn; }", "`turn` is the session's"),
    (RUN + "workload { session { request; } }\nserver { end; }", "`end` is the session's"),
    (RUN + "workload { session { request; } }\nserver { request; }", "`request` inside a server or queue entry"),
    (RUN + "def take() { turn; }\nworkload { session { request; } }\nserver {\n take(); }", "`turn` is the session's"),
    # statements
    (RUN + WL + "session { ; }", "expected a statement, found Semi"),
    (RUN + WL + "session { 5; }", "expected a statement, found 5"),
    (RUN + WL + "session { foo; }", "unknown statement `foo`"),
    (RUN + WL + "session { foo(1); }", "unknown statement `foo`"),
    (RUN + WL + "session { def f(x) = x; }", "unknown statement `def`"),
    (RUN + WL + "session { use \"a\"; }", "unknown statement `use`"),
    (RUN + WL + "session { observe a = 1;", "expected a statement, found Eof"),
    (RUN + WL + "session { observe a = 1 }", "expected Semi, found RBrace"),
    (RUN + WL + KV + "session { enter kv (1) { } }", "`enter` is now `hold`"),
    (RUN + WL + KV + "session { hold kv (1) fits (2) { } }", "`fits` is now `reserve`"),
    (RUN + WL + KV + "session { hold kv (1) { } keep (2); }", "`keep` is now `cache`"),
    (RUN + WL + KV + "session { hold kv (1) where x = 1 { } }", "`where x = e` is now `at admission (x = e)`"),
    (RUN + WL + KV + "session { admit kv (1) { } }", "`admit if … fit where x = e { … } keep (ℓ)` is now"),
    (RUN + WL + "session { set fit = 1; }", "`fit` is a retired word and names nothing"),
    (RUN + WL + "session { set keep = 1; }", "`keep` is a retired word and names nothing"),
    (RUN + WL + KV + "session { hold kv (1) at (x = 1) { } }", "expected `admission` after `at`"),
    (RUN + WL + KV + "session { hold kv (1) at admission () { } }", "expected identifier, found RParen"),
    (RUN + WL + KV + "session { hold kv (5) at admission (x = 1) reuse (1) { } }", "expected LBrace, found `reuse`"),
    (RUN + WL + KV + "session { hold kv (1) { } cache (1) lease kv (1) lease kv (2); }", "unknown statement `lease`"),
    (RUN + WL + KV + "session { hold kv (1) { } lease kv (1) cache (1); }", "unknown statement `cache`"),
    (RUN + WL + KV + "session { hold kv (1) { }; ; }", "expected a statement, found Semi"),
    (RUN + WL + "session { branch (1) { } else branch (1) { } }", "expected LBrace, found `branch`"),
    (RUN + WL + "session { branch with 0.5 { } }", "expected LParen, found 0.5"),
    (RUN + WL + "session { choose j in 3 by (); }", "expected an expression, found RParen"),
    (RUN + WL + "session { choose j in 3 by j; }", "expected LParen, found `j`"),
    (RUN + WL + "stage s : fifo; session { run s; }", "expected LParen, found Semi"),
    (RUN + WL + "session { run (1); }", "`run` names a stage: `run STAGE (X)`"),
    (RUN + WL + "session { run s prefill 3; }", "expected LParen, found 3"),
    (RUN + WL + "session { request; }", "`request` is a statement of the `session` inside `workload`"),
    (RUN + WL + "session { turn 1; }", "expected Semi, found 1"),
    (RUN + WL + "session { mark; }", "`mark` is a queue entry's statement"),
    (RUN + WL + "session { observe 1 = 2; }", "expected identifier, found 1"),
    (RUN + WL + "session { set a 2; }", "expected Assign, found 2"),
    (RUN + WL + KV + "session { hold kv 1 { } }", "expected LParen, found 1"),
    (RUN + WL + KV + "session { grow kv; }", "expected LParen, found Semi"),
    (RUN + WL + KV + "session { drop kv[1] (1); }", "expected Semi, found LParen"),
    (RUN + WL + "session { q.x; }", "expected LParen, found Semi"),
    (RUN + WL + "session { q.x(1) to kv 1; }", "expected LParen, found 1"),
    (RUN + WL + "session { q[1]; }", "`q[…]` as a statement: a queue's entry is `q[i].verb (…)`"),
    (RUN + WL + "session { loop; }", "expected LBrace, found Semi"),
    # def
    (RUN + WL + "def hold(x) = x;", "`hold` is a word of the language"),
    (RUN + WL + "def min(x) = x;", "`min` is a word of the language"),
    (RUN + WL + "def exp(x) = x;", "`exp` is a word of the language"),
    (RUN + WL + "def keep(x) = x;", "`keep` is a retired word and names nothing: `keep` is now `cache`"),
    (RUN + WL + "def enter(x) = x;", "`enter` is a retired word and names nothing"),
    (RUN + WL + "def f(x) = x; def f(y) = y;", "`f` is defined twice"),
    (RUN + WL + "def f(x) = f(x);", "`f` uses itself"),
    (RUN + WL + "def g(x) = f(x);\ndef f(x) = x;", "`g` uses `f`, which is defined after it"),
    (RUN + WL + "def f(cap) = cap;", "`cap` is a word of the language: name the parameter otherwise"),
    (RUN + WL + "def f(keep) = 1;", "`keep` is a retired word"),
    (RUN + WL + "def f(x, x) = x;", "`x` is a parameter twice"),
    (RUN + WL + "def f(p) { set p = 1; }", "`p` is a parameter, and the body names with it what it assigns or binds"),
    (RUN + WL + "def f(p) { choose p in 2 by (p); }", "`p` is a parameter, and the body names"),
    (RUN + WL + "def f(p) = sum p in 3 (p);", "`p` is a parameter, and the body names"),
    (RUN + WL + KV + "def f(p) { hold kv (1) at admission (p = 1) { } }", "`p` is a parameter, and the body names"),
    (RUN + WL + "def f(x) = x;\nsession { observe a = f(1, 2); }", "`f` takes 1 argument(s), got 2"),
    (RUN + WL + "def f(x) = x;\nsession { observe a = f(); }", "`f` takes 1 argument(s), got 0"),
    (RUN + WL + "def f(x, y) = x;\nsession { observe a = f(1, ); }", "`f`: the argument for `y` is empty"),
    (RUN + WL + "def f(x) = x;\nsession { f(1); }", "`f` is an expression (`def f(…) = …;`), not statements"),
    (RUN + WL + "def s(x) { observe a = x; }\nsession { observe b = s(1); }", "`s` is statements (`def s(…) { … }`), not an expression"),
    (RUN + WL + "def f(x) = x * x;\nsession { observe a = f(~exp(1)); }", "the argument for `x` draws, and `f` reads `x` 2 times: it would draw 2 times"),
    (RUN + WL + "def f(x) { set s = 1; observe a = x; }\nsession { f(s + 1); }", "the argument for `x` reads `s`, which `f` assigns"),
    (RUN + WL + "def f(x) { observe a = x; }\nsession { f(now); }", "an argument of `f` reads `now`, which changes while statements run"),
    (RUN + WL + KV + "def f(x) { observe a = x; }\nsession { f(used(kv)); }", "the argument for `x` of `f` reads `used(…)`, which changes"),
    (RUN + WL + "def f(x) { observe a = x; }\nsession { f(waited); }", "an argument of `f` reads `waited`"),
    (RUN + WL + "def f(x) = ;", "`def f` has no expression"),
    (RUN + WL + "def f(x) = (x;", "`def f` is not closed"),
    (RUN + WL + "def f(x) { observe a = x; ", "`def f` is not closed"),
    (RUN + WL + "def f(x) 3", "expected `= expression;` or `{ statements }` after `def f(…)`, found 3"),
    (RUN + WL + "def f(x) = x);", "unmatched RParen"),
    (RUN + WL + "def f(x) = x]; ", "unmatched RBracket"),
    (RUN + WL + "def f(x] = x;", "expected RParen, found RBracket"),
    (RUN + WL + "def f x = 1;", "expected LParen, found `x`"),
    (RUN + WL + "def (x) = 1;", "expected identifier, found LParen"),
    (RUN + WL + "def f(x y) = 1;", "expected RParen, found `y`"),
    (RUN + WL + "def f(,) = 1;", "expected identifier, found Comma"),
    (RUN + WL + "def kv(x) = x;\npool kv { }", "`kv` is defined, and is also a pool"),
    (RUN + WL + "stage s : delay;\ndef s(x) = x;", "`s` is defined, and is also a stage"),
    (RUN + WL + "def n(x) = x;\nlet n = 2;", "`n` is defined, and is also a `let` constant"),
    (RUN + WL + "def f(x) = x + ;\nsession { observe a = f(1); }", "expected an expression, found RParen"),
    (RUN + WL + "use \"lib/a.sq\";", "reads a file next to the program, and this program was given as text"),
    (RUN + "def a(x) = x + x;\ndef d0(x) = a(x) + a(x);\n" + "".join(
        f"def d{i}(x) = d{i - 1}(x) + d{i - 1}(x);\n" for i in range(1, 11)) + WL
     + "session { observe a = d10(1); }", "the definitions expand to more than a program can hold"),
    # the two sides
    (RUN + "workload { arrive batch(1); session { request; } }", "`request;` needs a `server` block"),
    (RUN + "workload { arrive batch(1); session { observe a = 1; } }\nserver { }",
     "`server` is never requested: the workload's session has no `request;`"),
    (RUN + WL + "server { observe a = 1; }", "`server` needs a `session` inside `workload` that says `request;`"),
    (RUN + "workload { arrive batch(1); session { observe a = 1; } }",
     "a `session` inside `workload` is written against a `server` block"),
    (RUN + "workload { arrive batch(1); session { request q; } }", "`request q`: no queue `q` is declared"),
    (RUN + "queue q { }\nworkload { arrive batch(1); session { request q; } }",
     "`request q`: queue `q` does not play `gateway`"),
    (RUN + "def next(x) { turn; observe a = x; }\nsession { next(n); }\n"
     "workload { arrive batch(1); turn { set n = 1; } }", "an argument of `next` reads `n`, which its `turn;` assigns"),
    (RUN + "def next(x) { turn; observe a = x; }\ndef n2(x) { next(x); }\n"
     "workload { arrive batch(1); session { n2(new); request; } }\nserver { }",
     "an argument of `n2` reads `new`, which its `turn;` assigns"),
    (RUN + "def next(x) { request; observe a = x; }\nworkload { arrive batch(1); session { next(s); } }\n"
     "server { set s = 1; }", "an argument of `next` reads `s`, which its `request;` assigns"),
    (RUN + WL + "def f(p) { observe p = 1; }", "`p` is a parameter, and the body names with it"),
    # queues
    (RUN + "queue prefill { }", "`prefill` is a serving word; a queue needs another name"),
    (RUN + "queue q : foo { }", "unknown role `foo`: a queue plays gateway, prefill, decode or link"),
    (RUN + "queue q[2] : gateway { route { } }", "a gateway is one queue, not a family"),
    (RUN + "queue q : prefill { }", "queue `q` plays `prefill` and has no `prefill` entry"),
    (RUN + "queue q : decode { pool kv { } serve delay; decode (x) from s { run (x); } }",
     "queue `q` plays `decode` and has no `decode` entry"),
    (RUN + "queue q : link { nic delay; }", "queue `q` plays `link` and has neither a `serve` nor a `transfer` entry"),
    (RUN + "queue q { bake (x) { } }", "`bake` is not an entry of any role"),
    (RUN + "queue q { decode (x) { } }", "`decode` is an entry of a `decode` queue; declare `queue q : decode`"),
    (RUN + "queue q : decode { decode (x) { } decode (y) { } }", "queue `q` has `decode` twice"),
    (RUN + "queue q : decode { decode (x, y) { } }", "`q.decode` takes 1 parameter(s), as the role says"),
    (RUN + "queue q : decode { decode x { } }", "`q.decode` takes 1 parameter(s), as the role says"),
    (RUN + "queue q : gateway { route (x) { } }", "`q.route` takes 0 parameter(s), as the role says (`route`)"),
    (RUN + "queue q : decode { decode (x) { } pool kv { } }", "queue `q` declares its pools first"),
    (RUN + "queue q : decode { decode (x) { } serve delay; }", "queue `q` declares its `serve` above its entries"),
    (RUN + "queue q : decode { decode (x) { } nic delay; }", "queue `q` declares its `nic` above its entries"),
    (RUN + "queue q { serve delay; serve delay; }", "`serve` twice: queue `q` is one stage"),
    (RUN + "queue q { nic delay; nic delay; }", "`nic` twice: queue `q` has one NIC"),
    (RUN + "queue q { pool kv[2] { } }", "`pool kv[…]` in queue `q`: a queue's pool is the member's"),
    (RUN + "queue q { 5 }", "expected `pool`, `serve` or an entry in queue `q`, found 5"),
    (RUN + "queue q { serve fifo latency 1; }", "`latency` belongs to the `serve` of a queue that plays `link`"),
    (RUN + "queue q : link { serve fifo; latency 1; transfer (n) { } }",
     "queue `q` has a `transfer` entry and a `latency`"),
    (RUN + "queue q : link { serve fifo; nic delay; latency 1; }", "expected LBrace, found 1"),
    (RUN + "queue q : link { serve step { cost 1; } latency 1 }", "expected Semi, found RBrace"),
    (RUN + "queue q : decode { decode (x) { run (1); } }", "`run (…)` in queue `q`, which has no `serve`"),
    (RUN + "queue q : decode { decode (x) { turn; } }", "`turn` is the session's"),
    (RUN + "queue q : decode { serve delay; decode (x) { request; } }", "`request` inside a server or queue entry"),
    (RUN + "queue a { nic ps(1); }\nb pull a share maxmin;", "`b pull a`: no queue `b` is declared above"),
    (RUN + "queue a { }\nqueue b { }\nb pull a share maxmin;", "`b pull a`: queue `b` has no `nic`"),
    (RUN + "queue a { nic ps(1); }\nqueue b { nic ps(1); }\nb pull a share maxmin;\nb pull a share maxmin;",
     "`b` pulls from `a` already: one relation per reader"),
    (RUN + "queue a { nic ps(1); }\nqueue b { nic ps(1); }\nb pull a;",
     "`b pull a` names how concurrent reads divide the NICs: `share maxmin` or `share bottleneck`, found Semi"),
    (RUN + "share pull maxmin;", "`share pull maxmin`: no queue `share` is declared above"),
    (RUN + "queue a { }\nshare maxmin;\nshare bottle neck;", "`share` is given twice: the first is on line 3"),
    # stages and serving forms, resolved while parsing
    (RUN + "stage e : step { budget 1; }", "a step stage needs `cost`"),
    (RUN + "stage e : step { cost 1; } stage f : step { chunk 1; };", "a step stage needs `cost`"),
    (RUN + "stage s : ( 2 ) ;", "unknown stage kind LParen"),
    (RUN + "stage s : ;", "unknown stage kind Semi"),
    (RUN + "stage s : step { cost 1; decode last; }", "`decode first;` is now `serve decode first;`"),
    (RUN + "stage s : step { cost 1; exclusive; }", "`exclusive prefill;` is now `serve exclusive prefill;`"),
    (RUN + "pool kv { cap 10; } stage e [ step { cost 1; } ]", "array size must be a positive integer or a `let`"),
    (RUN + WL + "stage e : step { cost 1; } stage f : step { cost 1; }\nsession { decode 3; }",
     "several stages play `decode` (e, f): write `decode on STAGE (...)`"),
    (RUN + WL + "session { decode 3; }\nstage e : step { cost 1; }", "no stage declared above plays `decode`"),
    (RUN + WL + "session { tool +; }", "no stage declared above plays `tool`: name a stage `tool`"),
    (RUN + WL + "session { tool on zz 3; }", "`tool on zz`: no stage `zz` is declared above"),
    (RUN + WL + "stage link : delay; session { transfer 1; }", "`transfer` without `from P to Q (n)`"),
    (RUN + WL + "stage link : delay; session { transfer 1 growing kv from a to b (1); }",
     "`transfer … from P to Q`: a transfer does not grow a pool"),
    (RUN + WL + "stage link : delay; stage transfer : delay; session { transfer 1 from a to b (1); }",
     "several stages play `transfer` (link, transfer)"),
    (RUN + WL + "stage e : step { cost 1; }\nqueue q : decode { serve delay; decode (x) { decode 3; } }",
     "no stage declared above plays `decode`"),
    (RUN + WL + "queue q : decode { pool kv { } serve delay; decode (x) { } decode (x) from s "
     "{ hold kv (1) { transfer 3 from s to kv (1); } } }", "no stage declared above plays `transfer`"),
    # words
    (RUN + WL + "session { keep (1); }", "`keep` is now `cache`"),
    (RUN + WL + "session { fit (1); }", "`fit` is gone: the pools of a `hold` are the condition"),
    (RUN + WL + "session { set admit = 1; }", "`admit` is a retired word and names nothing"),
    (RUN + WL + "session { observe a = self; }", "`self` is a queue entry's word: the member's own index"),
    (RUN + WL + "session { observe a = x.; }", "expected identifier, found Semi"),
    (RUN + WL + "session { observe a = min(s[(2], 1); }", "expected RParen, found RBracket"),
    (RUN + WL + "stage s : delay;\ndef f(x) { run s (x); }\nsession { f(1) f(2); }", "expected `;` after `f(…)`, found `f`"),
]


def _pyserq_error(source):
    try:
        pyserq.compile(source=source)
    except Exception as err:
        return str(err)
    return None


@pytest.mark.parametrize("source,phrase", CASES, ids=[c[1][:40] for c in CASES])
def test_rejected_like_pyserq(source, phrase):
    theirs = _pyserq_error(source)
    assert theirs is not None and phrase in theirs, theirs
    with pytest.raises(SqError) as info:
        parse(source)
    err = info.value
    assert err.phase == "parse"
    assert phrase in err.message
    where = re.match(r"(\d+):(\d+): ", theirs)
    if where:
        assert (err.line, err.col) == (int(where.group(1)), int(where.group(2)))
    notes = [line for line in theirs.split("\n") if line.startswith(("note:", "help:"))]
    for note in notes:
        assert note in err.notes


def _mutations(count, seed):
    """Small token-level edits of the probe programs."""
    import random
    probes = spec_probes()
    rng = random.Random(seed)
    extras = [";", "{", "}", "(", ")", "[", "]", "~", "def", "hold", "-", ".5", '"x"', "queue", "at",
              ",", ".", "turn;", "request;", "serve", "latency", "pull", "share", "in", "by", "sum", "=",
              "?", ":", "^", "!", "cache", "lease", "self", "from", "to", "on", "growing", "prefill",
              "decode", "tool", "transfer", "run", "step", "cost", "nic", "pool", "stage", "let"]
    out = []
    while len(out) < count:
        toks = re.findall(r'"[^"]*"|\w+|[^\s\w]', rng.choice(probes)["source"])
        i = rng.randrange(len(toks))
        op = rng.random()
        if op < 0.4:
            toks[i] = rng.choice(extras + toks)
        elif op < 0.7:
            del toks[i]
        else:
            toks.insert(i, rng.choice(extras + toks))
        out.append(" ".join(toks))
    return out


def test_mutated_probes_are_rejected_like_pyserq(tmp_path, monkeypatch):
    """Where 0.1.2 gives a parse error (located, not a link error), we give the
    same one at the same place; where it parses, so do we."""
    monkeypatch.chdir(PROBES_DIR)
    for source in _mutations(400, seed=5):
        theirs = _pyserq_error(source)
        theirs_parse = theirs is not None and re.match(r"\d+:\d+: ", theirs) and "link error" not in theirs
        try:
            parse(source)
            mine = None
        except SqError as err:
            mine = f"{err.line}:{err.col}: {err.message}"
        if theirs_parse:
            assert mine == theirs.split("\n")[0], source
        else:
            assert mine is None, source
