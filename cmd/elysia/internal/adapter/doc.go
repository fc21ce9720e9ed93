// Package adapter gives package web what it declares it needs, over the
// service's gateways (mcpgateway), their Discovery and the store:
//
//   - Servers: web.Servers, web.UserServers and web.ServerFeatures over the
//     gateways, their values copied into web's wire types and their errors
//     made into what web shows (masked, naming the server, classified);
//   - Runner and TextModel: stream.Runner and web.TextModel over the tree and
//     the decision model;
//   - SignIns: signin.SignIns over the gateways' OAuth client;
//   - UserSecrets and GatewaySecrets: users' own secrets, set through web
//     and read by the gateways for ${user:NAME};
//   - VaultTokens and VaultPending: the gateways' token and pending sign-in
//     stores over the store's encrypted Vault (OpenVault);
//   - Changes: stream.Changes over the Discovery's notifications;
//   - NewGatewayMetrics and NewGatewayCollector: the gateways' Prometheus
//     metrics, for the registry web serves on /metrics.
//
// cmd/elysia builds these and passes them to web.New and mcpgateway; it
// keeps the flags, the wiring and the shutdown.
package adapter
