package main

import (
	"strings"
	"testing"
)

func TestMaxPromptBytes(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    int
		wantErr bool
	}{
		{name: "unset", env: map[string]string{}, want: 0},
		{name: "empty", env: map[string]string{"ELYSIA_MAX_PROMPT_BYTES": ""}, want: 0},
		{name: "zero is the default", env: map[string]string{"ELYSIA_MAX_PROMPT_BYTES": "0"}, want: 0},
		{name: "bytes", env: map[string]string{"ELYSIA_MAX_PROMPT_BYTES": " 65536 "}, want: 65536},
		{name: "negative is no budget", env: map[string]string{"ELYSIA_MAX_PROMPT_BYTES": "-1"}, want: -1},
		{name: "a unit is not a number", env: map[string]string{"ELYSIA_MAX_PROMPT_BYTES": "24KiB"}, wantErr: true},
		{name: "a fraction", env: map[string]string{"ELYSIA_MAX_PROMPT_BYTES": "1.5"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := maxPromptBytes(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "ELYSIA_MAX_PROMPT_BYTES") {
					t.Errorf("maxPromptBytes = %d, %v; want an error naming the variable", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("maxPromptBytes = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
