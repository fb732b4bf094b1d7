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
-- name: built-in macros nested past the bound (nullif 18 deep took 37 s past statement_timeout and cancels)
-- expect: nonadmin=54001
SET statement_timeout = '5s'; SELECT nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(nullif(1, 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2), 2);
-- name: a TEMP macro that copies its parameter, nested past the bound
-- expect: nonadmin=54001
CREATE TEMP MACRO twice(x) AS x + x; SET statement_timeout = '5s'; SELECT twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(twice(1))))))))))))))))))));
-- name: a chain of NOT MATERIALIZED CTEs past the bound (18 took 24.5 s)
-- expect: nonadmin=54001
SET statement_timeout = '5s'; WITH a0 AS (SELECT 1 AS x), a1 AS NOT MATERIALIZED (SELECT * FROM a0 UNION ALL SELECT * FROM a0), a2 AS NOT MATERIALIZED (SELECT * FROM a1 UNION ALL SELECT * FROM a1), a3 AS NOT MATERIALIZED (SELECT * FROM a2 UNION ALL SELECT * FROM a2), a4 AS NOT MATERIALIZED (SELECT * FROM a3 UNION ALL SELECT * FROM a3), a5 AS NOT MATERIALIZED (SELECT * FROM a4 UNION ALL SELECT * FROM a4), a6 AS NOT MATERIALIZED (SELECT * FROM a5 UNION ALL SELECT * FROM a5), a7 AS NOT MATERIALIZED (SELECT * FROM a6 UNION ALL SELECT * FROM a6), a8 AS NOT MATERIALIZED (SELECT * FROM a7 UNION ALL SELECT * FROM a7), a9 AS NOT MATERIALIZED (SELECT * FROM a8 UNION ALL SELECT * FROM a8), a10 AS NOT MATERIALIZED (SELECT * FROM a9 UNION ALL SELECT * FROM a9), a11 AS NOT MATERIALIZED (SELECT * FROM a10 UNION ALL SELECT * FROM a10), a12 AS NOT MATERIALIZED (SELECT * FROM a11 UNION ALL SELECT * FROM a11), a13 AS NOT MATERIALIZED (SELECT * FROM a12 UNION ALL SELECT * FROM a12), a14 AS NOT MATERIALIZED (SELECT * FROM a13 UNION ALL SELECT * FROM a13), a15 AS NOT MATERIALIZED (SELECT * FROM a14 UNION ALL SELECT * FROM a14), a16 AS NOT MATERIALIZED (SELECT * FROM a15 UNION ALL SELECT * FROM a15), a17 AS NOT MATERIALIZED (SELECT * FROM a16 UNION ALL SELECT * FROM a16), a18 AS NOT MATERIALIZED (SELECT * FROM a17 UNION ALL SELECT * FROM a17), a19 AS NOT MATERIALIZED (SELECT * FROM a18 UNION ALL SELECT * FROM a18), a20 AS NOT MATERIALIZED (SELECT * FROM a19 UNION ALL SELECT * FROM a19) SELECT count(*) FROM a20;
-- name: macros nested as people nest them answer
-- expect: nonadmin==1 admin==1
SELECT nullif(nullif(nullif(nullif(nullif(nullif(1, 2), 2), 2), 2), 2), 2);
-- name: many rows each just under the pattern bound: the chunk's bound ends it (27 s past the timeout before)
-- expect: nonadmin=22023 admin=22023
SET statement_timeout = '5s'; SELECT count(*) FROM range(40) t(i) WHERE repeat('a', 65000 + i*0) LIKE '%' || repeat('_', 65000) || 'b';
-- name: many rows each just under the edit distance bound (89 s past the timeout before)
-- expect: nonadmin=22023 admin=22023
SET statement_timeout = '5s'; SELECT sum(levenshtein(repeat('a', 8000 + i*0), repeat('b', 8000))) FROM range(200) t(i);
-- name: built-in macros chained by method calls, (1).nullif(2).nullif(2)... (2 min past the timeout before)
-- expect: nonadmin=54001
SET statement_timeout = '5s'; SELECT (1).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2).nullif(2);
-- name: simple CASE nested 15 deep (the parser's copies of the operand took the server past 11 GB and ended it)
-- expect: nonadmin=54001
SELECT CASE CASE CASE CASE CASE CASE CASE CASE CASE CASE CASE CASE CASE CASE CASE 1 WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END;
