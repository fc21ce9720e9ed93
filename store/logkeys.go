package store

// logKeyErr is the log key of an error (STYLE.md §9).
const logKeyErr = "err"
