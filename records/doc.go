// Package records serves the domain-record half of DHSI to SQL (issue 3,
// issue 15): one typed record per registered domain, landed by workers in
// the inbox and compacted into hash shards by package compiler.
//
// It owns the store's record schema (indexes/domains/datapackage.json and
// the shard layout it records), the view of the store a refresh publishes,
// the cache of parsed shards statements read through, and the SQL over
// them: domains, domain_record, domains_shards, domains_inbox and
// domain_errors. Its invariants are at the top of domains.go (Domains) and
// shardcache.go (shardCache); the record rule it shares with
// writers and compaction is compiler/rule.go. The URL index, the other half,
// is package catalog.
package records
