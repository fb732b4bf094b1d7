package tableschema

// DefaultDomainPackage is the sidecar of a new domain index (design 000,
// "Metadata Sidecar"): one resource, "shards", covering every shard file,
// keyed by domain. Write it with json.MarshalIndent.
func DefaultDomainPackage() *Package {
	s := &Schema{
		Fields: []Field{
			{Name: "domain", Type: TypeString, Constraints: &Constraints{Required: true}},
			{Name: "company_name", Type: TypeString},
			{Name: "scraper_version", Type: TypeInteger},
			{Name: "updated_at", Type: TypeDatetime},
		},
		PrimaryKey: []string{"domain"},
	}
	s.bindAll()
	return &Package{
		Name:    "domain-index",
		Profile: "tabular-data-package",
		Resources: []Resource{{
			Name:    "shards",
			Path:    []string{"shards/*.usv"},
			Profile: "tabular-data-resource",
			Format:  "usv",
			Schema:  s,
		}},
	}
}
