// Package ipcguard checks an Arrow IPC stream, message by message, for
// what arrow-go's IPC reader trusts without checking (declared sizes it
// allocates, nesting it recurses over), so that hostile bytes (an
// imported file, a schema stored in the bucket) fail as an error instead
// of making the reader allocate terabytes, a fatal error no recover
// catches. Used by importers (datasets' Arrow files) and tables (the
// schema a manifest holds).
package ipcguard
