-- name: ILIKE with twelve wildcards answers at once (DuckDB's own backtracked past 60 s)
-- expect: nonadmin==f admin==f
SET statement_timeout = '5s'; SELECT repeat('a', 60) ILIKE repeat('%a', 12) || 'b';
-- name: GLOB with twelve stars answers at once
-- expect: nonadmin==f admin==f
SET statement_timeout = '5s'; SELECT repeat('a', 60) GLOB repeat('*a', 12) || 'b';
-- name: LIKE with a pattern from a column answers at once
-- expect: nonadmin==f admin==f
SET statement_timeout = '5s'; SELECT x LIKE y FROM (VALUES (repeat('a', 60), repeat('%a', 12) || 'b')) t(x, y);
-- name: NOT ILIKE with an escape and underscores answers at once
-- expect: nonadmin==t admin==t
SET statement_timeout = '5s'; SELECT not_ilike_escape(repeat('a', 60), repeat('%_', 12) || 'b', '\');
-- name: a match past the per-row bound is an error, not minutes of a core
-- expect: nonadmin=22023 admin=22023
SELECT repeat('a', 70000000) LIKE '%a%b';
-- name: the built-in backtracking LIKE is not reachable by its qualified name
-- expect: nonadmin==f admin==f
SET statement_timeout = '5s'; SELECT system.main."~~*"(repeat('a', 60), repeat('%a', 12) || 'b');
-- name: levenshtein of two 100,000-byte strings is an error at once, not minutes of a core
-- expect: nonadmin=22023 admin=22023
SET statement_timeout = '5s'; SELECT levenshtein(repeat('a', 100000), repeat('b', 100000));
-- name: damerau_levenshtein's table is bounded
-- expect: nonadmin=22023 admin=22023
SET statement_timeout = '5s'; SELECT damerau_levenshtein(repeat('a', 20000), repeat('b', 20000));
-- name: ordinary edit distances answer as DuckDB's
-- expect: nonadmin==3|2 admin==3|2
SELECT levenshtein('kitten', 'sitting'), damerau_levenshtein('ca', 'abc');
