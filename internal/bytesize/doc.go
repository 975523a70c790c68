// Package bytesize formats byte counts for people: progress lines, log
// lines and command summaries ("1.5 MiB"). It is the one such formatter of
// the module; flag values, which must parse back exactly, are formatted
// by their flags (cmd/flightd's byteSize).
package bytesize
