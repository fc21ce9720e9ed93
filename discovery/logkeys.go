package discovery

// Log keys this package repeats (STYLE.md §9). A gateway is named by its
// server's name, under the key the gateways log it with.
const (
	logKeyServer = "server"
	logKeyErr    = "err"
)
