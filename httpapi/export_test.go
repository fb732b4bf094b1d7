package httpapi

// SetCollapseRound makes the rounds of a collapsed answer n lines long, so
// a small corpus takes many rounds; it returns the undo.
func SetCollapseRound(n int) (undo func()) {
	old := collapseRound
	collapseRound = n
	return func() { collapseRound = old }
}
