package main

import (
	"strings"
	"testing"
	"time"

	"github.com/elysia-go/elysia/mcpgateway"
)

func TestPerUserOptionsFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	var o mcpgateway.Options
	if err := perUserOptions(env(map[string]string{"ELYSIA_MCP_MAX_USERS": " 250 ", "ELYSIA_MCP_USER_IDLE": "5m", "ELYSIA_MCP_USER_WAIT": "30s"}), &o); err != nil {
		t.Fatal(err)
	}
	if o.MaxUsers != 250 || o.UserIdle != 5*time.Minute || o.UserWait != 30*time.Second {
		t.Errorf("options = %d, %v, %v; want 250, 5m, 30s", o.MaxUsers, o.UserIdle, o.UserWait)
	}
	var unset mcpgateway.Options
	if err := perUserOptions(env(nil), &unset); err != nil || unset.MaxUsers != 0 || unset.UserIdle != 0 || unset.UserWait != 0 {
		t.Errorf("unset: %+v, %v; want the zeros (the gateway's defaults)", unset, err)
	}
	for k, v := range map[string]string{"ELYSIA_MCP_MAX_USERS": "0", "ELYSIA_MCP_USER_IDLE": "forever", "ELYSIA_MCP_USER_WAIT": "2h"} {
		err := perUserOptions(env(map[string]string{k: v}), &mcpgateway.Options{})
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming the variable", k, v, err)
		}
	}
}
