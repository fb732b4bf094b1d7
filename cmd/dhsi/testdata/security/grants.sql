-- name: the hidden dataset is absent from datasets
-- expect: reader==0 writer==0 admin==1
SELECT count(*) FROM datasets WHERE dataset = 'secret';
-- name: the hidden dataset is absent from the table function behind the view
-- expect: reader==0 admin==1
SELECT count(*) FROM dhsi_datasets() WHERE dataset = 'secret';
-- name: the hidden dataset is absent, not zero, in domain_datasets
-- expect: reader==0 writer==0 admin==1
SELECT count(*) FROM domain_datasets(:'domain') WHERE dataset = 'secret';
-- name: domain_urls of the hidden dataset answers as a missing one
-- expect: reader=42704 writer=42704 admin=ok
SELECT count(*) FROM domain_urls(:'domain', :secret_id, 0, 100);
-- name: domain_urls of a missing dataset
-- expect: reader=42704 writer=42704 admin=42704
SELECT count(*) FROM domain_urls(:'domain', 999, 0, 100);
-- name: the urls view has no row of the hidden dataset
-- expect: reader==0 writer==0 admin=ok
SELECT count(*) FROM urls WHERE dataset_id = :secret_id;
-- name: the urls view filtered by domain (answered from the postings) has no row of the hidden dataset
-- expect: reader==0 writer==0 admin==5
SELECT count(*) FROM urls WHERE domain = :'domain' AND dataset_id = :secret_id;
-- name: urls_by_domain, the function behind that filter, called by name
-- expect: reader==0 writer==0 admin==5
SELECT count(*) FROM urls_by_domain(:'domain') WHERE dataset_id = :secret_id;
-- name: urls_scan, the function behind the urls view on S3, called by name
-- expect: reader==0 writer==0 admin==5
SELECT count(*) FROM urls_scan() WHERE dataset_id = :secret_id AND domain = :'domain';
-- name: urls_scan has only visible datasets
-- expect: reader==:visible_datasets
SELECT count(DISTINCT dataset_id) FROM urls_scan();
-- name: a prepared lookup of the urls view by domain
-- expect: reader==0 admin==5
PREPARE q AS SELECT count(*) FROM urls u WHERE u.domain = $1 AND u.dataset_id = $2; EXECUTE q(:'domain', :secret_id);
-- name: the urls view has only visible datasets
-- expect: reader==:visible_datasets
SELECT count(DISTINCT dataset_id) FROM urls;
-- name: a CTE over datasets
-- expect: reader==0 admin==1
WITH d AS (SELECT * FROM datasets) SELECT count(*) FROM d WHERE dataset = 'secret';
-- name: a subquery over domain_datasets
-- expect: reader==0 admin==1
SELECT count(*) FROM (SELECT dataset FROM domain_datasets(:'domain')) WHERE dataset = 'secret';
-- name: the hidden dataset is absent from domain_dataset_list, the scalar for joins
-- expect: reader==0 writer==0 admin==1
SELECT count(*) FROM (SELECT :'domain' AS domain) d, unnest(domain_dataset_list(d.domain)) t(x) WHERE x.dataset = 'secret';
-- name: a join of domain_datasets with datasets
-- expect: reader==0 admin==1
SELECT count(*) FROM domain_datasets(:'domain') dd JOIN datasets d USING (dataset_id) WHERE d.dataset = 'secret';
-- name: grants of the hidden dataset are hidden too
-- expect: reader==0 admin==1
SELECT count(*) FROM dataset_grants WHERE dataset = 'secret';
-- name: the lake file list names no hidden file
-- expect: reader==0
SELECT count(*) FROM unnest(dhsi_lake_files()) t(f) WHERE f LIKE '%dataset_id=' || :secret_id || '/%';
-- name: the urls view's text names no file
-- expect: reader==0 admin==0
SELECT count(*) FROM duckdb_views() WHERE view_name = 'urls' AND sql LIKE '%.parquet%';
-- name: a prepared statement over the hidden dataset
-- expect: reader=42704 admin=ok
PREPARE p AS SELECT count(*) FROM domain_urls($1, $2, 0, 100); EXECUTE p(:'domain', :secret_id);
-- name: a cursor over the hidden dataset's rows
-- expect: reader== admin=ok
BEGIN; DECLARE c CURSOR FOR SELECT url FROM urls WHERE dataset_id = :secret_id; FETCH ALL FROM c; COMMIT;
-- name: COPY TO STDOUT of the hidden dataset's pages
-- expect: reader=42704 admin=ok
COPY (SELECT url FROM domain_urls(:'domain', :secret_id, 0, 100)) TO STDOUT;
-- name: a TEMP view over urls
-- expect: reader==0
CREATE TEMP VIEW mine AS SELECT * FROM urls; SELECT count(*) FROM mine WHERE dataset_id = :secret_id;
-- name: grant_dataset is for admins
-- expect: nonadmin=42501
CALL grant_dataset('secret', 'rita');
-- name: grant_dataset as a table function is for admins
-- expect: nonadmin=42501
SELECT * FROM grant_dataset('secret', 'rita');
-- name: revoke_dataset is for admins
-- expect: nonadmin=42501
CALL revoke_dataset('secret', 'alice');
-- name: compact_all is for writers
-- expect: reader=42501 writer=ok admin=ok
CALL compact_all();
-- name: compact_all as a table function is for writers
-- expect: reader=42501
SELECT * FROM compact_all();
-- name: reshard rewrites every shard of the store: for admins
-- expect: nonadmin=42501
CALL reshard(3);
-- name: reshard as a table function is for admins too
-- expect: nonadmin=42501
SELECT * FROM reshard(3);
-- name: reshard to a width no layout has
-- expect: admin=22023
CALL reshard(9);
-- name: reshard to the width the store has is nothing to do
-- expect: admin==1
SELECT count(*) FROM reshard(2) WHERE status = 'already at width 2';
-- name: inbox_put is for writers
-- expect: reader=42501 writer=ok
CALL inbox_put('bypass-suite.example', '{"company_name": "x"}');
-- name: ingest of a host file is for admins (no --ingest-dir)
-- expect: reader=42501 writer=42501
CALL ingest('stolen', '/etc/passwd');
-- name: ingest with keep_columns is the same ingest
-- expect: reader=42501 writer=42501
CALL ingest('stolen', '/etc/passwd', keep_columns := 'root');
-- name: the function under the ingest macro checks the same rights
-- expect: reader=42501 writer=42501
CALL dhsi_ingest('stolen', '/etc/passwd', '');
-- name: an unknown CALL
-- expect: nonadmin=42501
CALL checkpoint();
-- name: dataset_domains of the hidden dataset answers as a missing one
-- expect: reader=42704 writer=42704 admin=ok
SELECT count(*) FROM dataset_domains(:secret_id);
-- name: dataset_domains of a missing dataset
-- expect: reader=42704 writer=42704 admin=42704
SELECT count(*) FROM dataset_domains(999);
-- name: dataset_domains of the hidden dataset on the native path answers as a missing one
-- expect: reader=42704 writer=42704 admin=ok
SELECT * FROM dataset_domains(:secret_id);
-- name: dataset_domains of a visible dataset
-- expect: reader==13 writer==13 admin==13
SELECT count(*) FROM dataset_domains(:open_id);
-- name: a set operation subtracting the hidden dataset answers as a missing one, not with what is left
-- expect: reader=42704 writer=42704 admin==12
SELECT count(*) FROM dataset_domains_set(:open_id, 'andnot', :secret_id);
-- name: a set operation with the hidden dataset first answers as a missing one
-- expect: reader=42704 writer=42704 admin==1
SELECT count(*) FROM dataset_domains_set(:secret_id, 'and', :open_id);
-- name: every set operation with the hidden dataset, natively, answers as a missing one
-- expect: reader=42704 writer=42704 admin=ok
SELECT * FROM dataset_domains_set(:open_id, 'xor', :secret_id);
-- name: a set operation with a missing dataset
-- expect: reader=42704 writer=42704 admin=42704
SELECT count(*) FROM dataset_domains_set(:open_id, 'or', 999);
-- name: a set operation of two datasets the caller sees
-- expect: reader==shared.example writer=42704 admin==shared.example
SELECT domain FROM dataset_domains_set(:open_id, 'and', :team_id);
-- name: a bad operation is the caller's mistake whatever the datasets
-- expect: reader=22023 writer=22023 admin=22023
SELECT count(*) FROM dataset_domains_set(:secret_id, 'nand', :open_id);
-- name: a prepared set operation over the hidden dataset
-- expect: reader=42704 admin=ok
PREPARE q AS SELECT count(*) FROM dataset_domains_set($1, 'andnot', $2); EXECUTE q(:open_id, :secret_id);
-- name: COPY TO STDOUT of the hidden dataset's domains
-- expect: reader=42704 writer=42704 admin=ok
COPY (SELECT domain FROM dataset_domains(:secret_id)) TO STDOUT;
-- name: the hidden dataset's domains through a join with datasets
-- expect: reader=42704 admin=ok
SELECT count(*) FROM datasets d, dataset_domains(:secret_id) x WHERE d.dataset = 'open';
