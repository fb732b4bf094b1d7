package sqlserver

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jeroenrinzema/psql-wire/codes"
)

// guc describes one PostgreSQL run-time parameter that DHSI answers itself.
// Parameters DuckDB knows (memory_limit, threads, ...) pass through to
// DuckDB; names with a dot are custom parameters and are stored as given.
type guc struct {
	def      string
	report   bool // sent as ParameterStatus at start-up and on change (GUC_REPORT)
	readOnly bool
	// normalize validates a new value and returns its canonical form.
	normalize func(string) (string, error)
	// show formats the canonical form as SHOW prints it; nil: as is
	show func(string) string
}

// millisShow prints a time parameter as PostgreSQL's SHOW does: in the
// largest unit that divides it exactly ("700ms", "5s", "1min", "0").
func millisShow(v string) string {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms == 0 {
		return v
	}
	for _, u := range []struct {
		suffix string
		ms     int64
	}{{"d", 86400000}, {"h", 3600000}, {"min", 60000}, {"s", 1000}} {
		if ms%u.ms == 0 {
			return strconv.FormatInt(ms/u.ms, 10) + u.suffix
		}
	}
	return v + "ms"
}

func onlyValue(allowed ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		for _, a := range allowed {
			if strings.EqualFold(strings.TrimSpace(v), a) {
				return allowed[0], nil
			}
		}
		return "", fmt.Errorf("only %s is supported", allowed[0])
	}
}

func anyValue(v string) (string, error) { return v, nil }

func boolValue(v string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "true", "yes", "1", "t":
		return "on", nil
	case "off", "false", "no", "0", "f":
		return "off", nil
	}
	return "", fmt.Errorf("requires a Boolean value")
}

// millisValue parses PostgreSQL time units ("5s", "100ms", "1min", "0").
func millisValue(v string) (string, error) {
	v = strings.TrimSpace(strings.Trim(v, "'"))
	units := []struct {
		suffix string
		ms     float64
	}{{"ms", 1}, {"min", 60000}, {"s", 1000}, {"h", 3600000}, {"d", 86400000}}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			mult = u.ms
			v = strings.TrimSpace(strings.TrimSuffix(v, u.suffix))
			break
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return "", fmt.Errorf("invalid value for a time parameter: %q", v)
	}
	return strconv.FormatInt(int64(f*mult), 10), nil
}

func dateStyleValue(v string) (string, error) {
	up := strings.ToUpper(v)
	if !strings.Contains(up, "ISO") && strings.TrimSpace(up) != "" {
		return "", fmt.Errorf("only ISO output is supported")
	}
	order := "MDY"
	for _, o := range []string{"DMY", "YMD", "MDY"} {
		if strings.Contains(up, o) {
			order = o
		}
	}
	return "ISO, " + order, nil
}

func timeZoneValue(v string) (string, error) {
	v = strings.TrimSpace(strings.Trim(v, "'"))
	if strings.EqualFold(v, "utc") || strings.EqualFold(v, "z") || strings.EqualFold(v, "zulu") || strings.EqualFold(v, "gmt") {
		return "UTC", nil
	}
	// time.LoadLocation reads "" as UTC and "Local" as the server's zone;
	// PostgreSQL rejects the first and DuckDB knows neither.
	if _, err := time.LoadLocation(v); err != nil || v == "" || strings.EqualFold(v, "local") {
		return "", fmt.Errorf("time zone %q not recognized", v)
	}
	return v, nil
}

func isolationValue(v string) (string, error) {
	v = strings.ToLower(strings.Join(strings.Fields(v), " "))
	switch v {
	case "read uncommitted", "read committed", "repeatable read", "serializable":
		return v, nil
	}
	return "", fmt.Errorf("invalid transaction isolation level %q", v)
}

// serverVersion is what DHSI reports as PostgreSQL's version: drivers parse
// it to choose protocol features, and 16 is what DHSI's catalog emulates.
const serverVersion = "16.6"

// serverVersionNum is server_version_num for serverVersion.
const serverVersionNum = "160006"

func gucTable() map[string]guc {
	return map[string]guc{
		"application_name":                    {def: "", report: true, normalize: anyValue},
		"client_encoding":                     {def: "UTF8", report: true, normalize: onlyValue("UTF8", "UTF-8", "UNICODE", "utf8")},
		"datestyle":                           {def: "ISO, MDY", report: true, normalize: dateStyleValue},
		"intervalstyle":                       {def: "postgres", report: true, normalize: onlyValue("postgres")},
		"timezone":                            {def: "UTC", report: true, normalize: timeZoneValue},
		"standard_conforming_strings":         {def: "on", report: true, normalize: onlyValue("on")},
		"integer_datetimes":                   {def: "on", report: true, readOnly: true},
		"server_version":                      {def: serverVersion, report: true, readOnly: true},
		"server_version_num":                  {def: serverVersionNum, readOnly: true},
		"server_encoding":                     {def: "UTF8", report: true, readOnly: true},
		"is_superuser":                        {def: "on", report: true, readOnly: true},
		"session_authorization":               {def: "", report: true, readOnly: true},
		"default_transaction_read_only":       {def: "off", report: true, normalize: boolValue},
		"in_hot_standby":                      {def: "off", report: true, readOnly: true},
		"extra_float_digits":                  {def: "1", normalize: anyValue},
		"search_path":                         {def: `"$user", public`, normalize: anyValue},
		"statement_timeout":                   {def: "0", normalize: millisValue, show: millisShow},
		"lock_timeout":                        {def: "0", normalize: millisValue, show: millisShow},
		"idle_in_transaction_session_timeout": {def: "0", normalize: millisValue, show: millisShow},
		"default_transaction_isolation":       {def: "read committed", normalize: isolationValue},
		"transaction_isolation":               {def: "read committed", normalize: isolationValue},
		"transaction_read_only":               {def: "off", normalize: boolValue},
		"bytea_output":                        {def: "hex", normalize: onlyValue("hex")},
		"max_identifier_length":               {def: "63", readOnly: true},
		"block_size":                          {def: "8192", readOnly: true},
		"lc_collate":                          {def: "C.UTF-8", readOnly: true},
		"lc_ctype":                            {def: "C.UTF-8", readOnly: true},
		"lc_messages":                         {def: "C.UTF-8", normalize: anyValue},
		"lc_monetary":                         {def: "C.UTF-8", normalize: anyValue},
		"lc_numeric":                          {def: "C.UTF-8", normalize: anyValue},
		"lc_time":                             {def: "C.UTF-8", normalize: anyValue},
		"client_min_messages":                 {def: "notice", normalize: anyValue},
		"row_security":                        {def: "on", normalize: boolValue},
		"synchronous_commit":                  {def: "on", normalize: anyValue},
		"jit":                                 {def: "off", normalize: anyValue},
		"work_mem":                            {def: "4MB", normalize: anyValue},
		"max_connections":                     {def: "100", readOnly: true},
		"password_encryption":                 {def: "scram-sha-256", readOnly: true},
		"ssl":                                 {def: "off", readOnly: true},
		"geqo":                                {def: "on", normalize: anyValue},
		"enable_seqscan":                      {def: "on", normalize: anyValue},
	}
}

// canonicalGUC maps a parameter name to the spelling PostgreSQL reports.
var gucDisplayName = map[string]string{
	"datestyle":     "DateStyle",
	"intervalstyle": "IntervalStyle",
	"timezone":      "TimeZone",
}

func displayName(name string) string {
	if d, ok := gucDisplayName[name]; ok {
		return d
	}
	return name
}

// settings are one session's parameter values.
//
// Only the session's own goroutine writes values, and only through put and
// remove, which hold mu; it reads values without the lock. Any other
// goroutine reads through shared, under mu: pg_stat_activity's rows are
// built on a DuckDB thread of another session, and the /metrics gauge on
// an HTTP goroutine, and Go ends the process on a map read concurrent
// with a write (a SET beside pg_stat_activity did, in a review of stop
// 36).
type settings struct {
	mu     sync.RWMutex
	values map[string]string
	// changes counts the puts and removes that changed values (the
	// session's goroutine only): syncVariables renders the session's
	// variables again only after one
	changes uint64
}

// put stores a value (the session's goroutine only).
func (s *settings) put(name, value string) {
	if old, ok := s.values[name]; ok && old == value {
		return // SET to the value it has, DISCARD ALL of a clean session
	}
	s.mu.Lock()
	s.values[name] = value
	s.changes++
	s.mu.Unlock()
}

// remove drops a custom parameter (the session's goroutine only).
func (s *settings) remove(name string) {
	if _, ok := s.values[name]; !ok {
		return
	}
	s.mu.Lock()
	delete(s.values, name)
	s.changes++
	s.mu.Unlock()
}

// shared is get for goroutines other than the session's.
func (s *settings) shared(name string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.values[name]
	return v, ok
}

// gucs is gucTable, built once: the table is read only (every
// session's settings read it), and building it for each SHOW's
// classification cost SHOW a sixth of its CPU (pprof, stop 44).
var gucs = sync.OnceValue(gucTable)

// knownSetting reports whether name (lower case) is a parameter of the
// table.
func knownSetting(name string) bool {
	_, ok := gucs()[name]
	return ok
}

// newSettings are a new session's settings; is_superuser says whether the
// user is an admin, as PostgreSQL's says whether the role is a superuser
// (drivers and BI tools read it to offer admin actions).
func newSettings(user string, superuser bool) *settings {
	s := &settings{values: make(map[string]string, len(gucs())+1)}
	for name, g := range gucs() {
		s.values[name] = g.def
	}
	s.values["session_authorization"] = user
	if !superuser {
		s.values["is_superuser"] = "off"
	}
	return s
}

func (s *settings) known(name string) bool {
	return knownSetting(strings.ToLower(name))
}

// set validates and stores a value; it reports whether clients must be told
// (ParameterStatus).
func (s *settings) set(name, value string) (canonical string, report bool, err error) {
	name = strings.ToLower(name)
	g, ok := gucs()[name]
	if !ok {
		if strings.Contains(name, ".") { // custom placeholder parameter
			s.put(name, value)
			return value, false, nil
		}
		return "", false, pgErrorf(codes.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if g.readOnly {
		return "", false, pgErrorf(codes.CantChangeRuntimeParam, "parameter %q cannot be changed", name)
	}
	v, err := g.normalize(value)
	if err != nil {
		return "", false, &Error{Severity: "ERROR", Code: codes.InvalidParameterValue,
			Message: fmt.Sprintf("invalid value for parameter %q: %q", displayName(name), value), Detail: err.Error()}
	}
	s.put(name, v)
	return v, g.report, nil
}

func (s *settings) reset(name string) (string, bool, error) {
	name = strings.ToLower(name)
	g, ok := gucs()[name]
	if !ok {
		if _, custom := s.values[name]; custom {
			s.remove(name)
			return "", false, nil
		}
		return "", false, pgErrorf(codes.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if g.readOnly {
		return "", false, pgErrorf(codes.CantChangeRuntimeParam, "parameter %q cannot be changed", name)
	}
	s.put(name, g.def)
	return g.def, g.report, nil
}

func (s *settings) get(name string) (string, bool) {
	v, ok := s.values[strings.ToLower(name)]
	return v, ok
}

// shown is a parameter as SHOW prints it.
func (s *settings) shown(name string) string {
	name = strings.ToLower(name)
	v := s.values[name]
	if g, ok := gucs()[name]; ok && g.show != nil {
		return g.show(v)
	}
	return v
}

// reported lists the GUC_REPORT parameters in a stable order.
func (s *settings) reported() [][2]string {
	var out [][2]string
	for name, g := range gucs() {
		if g.report {
			out = append(out, [2]string{displayName(name), s.values[name]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// all lists every parameter, for SHOW ALL.
func (s *settings) all() [][2]string {
	var out [][2]string
	for name := range s.values {
		out = append(out, [2]string{displayName(name), s.shown(name)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func (s *settings) location() *time.Location {
	tz, _ := s.get("timezone")
	if tz == "" || tz == "UTC" {
		return time.UTC
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return time.UTC
	}
	return loc
}

// duckVariables renders the statement that mirrors the session into DuckDB
// variables, which the catalog shim reads (current_setting, pg_settings,
// current_user, current_schemas): SQL cannot see Go state, and DuckDB's
// variables are per connection, so each session sees its own.
func (s *settings) duckVariables(user string, schemas []string) string {
	names := make([]string, 0, len(s.values))
	for name := range s.values {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("SET VARIABLE dhsi_settings = MAP {")
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteLiteral(name) + ": " + quoteLiteral(s.values[name]))
	}
	b.WriteString("}::MAP(VARCHAR, VARCHAR); SET VARIABLE dhsi_user = " + quoteLiteral(user) + "; SET VARIABLE dhsi_schemas = [")
	for i, sch := range schemas {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteLiteral(sch))
	}
	b.WriteString("]::VARCHAR[]")
	return b.String()
}

// duckSettingsVariable mirrors DuckDB's own settings too, for
// current_setting: DuckDB's version binds its argument as a constant, and a
// lookup in duckdb_settings() inside the macro would be a subquery, which
// DuckDB refuses in table function arguments (Grafana's generate_series
// over the search_path). It reads every DuckDB setting, so it runs only
// when one may have changed. A non-admin's leaves out the settings that
// name host paths (H1, hostpaths.go), and so do the pg_settings and
// current_setting() that read it.
func duckSettingsVariable(admin bool) string {
	if admin {
		return "SET VARIABLE dhsi_duck_settings = (SELECT map(list(name), list(value)) FROM duckdb_settings())"
	}
	return "SET VARIABLE dhsi_duck_settings = (SELECT map(list(name), list(value)) FROM duckdb_settings() WHERE name NOT IN ('" +
		strings.Join(hostPathSettings, "', '") + "'))"
}

// searchPathSchemas splits search_path into schema names.
func (s *settings) searchPathSchemas() []string {
	v, _ := s.get("search_path")
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		p = strings.Trim(p, `"`)
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
