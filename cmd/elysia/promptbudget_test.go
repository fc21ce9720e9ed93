package main

import (
	"strings"
	"testing"

	"github.com/elysia-go/elysia/llm"
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

func TestDescribeOptions(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		provider llm.Provider
		want     bool
		wantErr  bool
	}{
		{name: "openai sends functions", provider: llm.ProviderOpenAI, want: false},
		{name: "ollama sends none", provider: llm.ProviderOllama, want: true},
		{name: "empty is unset", env: map[string]string{"ELYSIA_DESCRIBE_OPTIONS": " "}, provider: llm.ProviderOllama, want: true},
		{name: "forced on", env: map[string]string{"ELYSIA_DESCRIBE_OPTIONS": "true"}, provider: llm.ProviderOpenAI, want: true},
		{name: "forced off", env: map[string]string{"ELYSIA_DESCRIBE_OPTIONS": "0"}, provider: llm.ProviderOllama, want: false},
		{name: "not a boolean", env: map[string]string{"ELYSIA_DESCRIBE_OPTIONS": "full"}, provider: llm.ProviderOpenAI, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := describeOptions(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }, llm.Info{Provider: tc.provider})
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "ELYSIA_DESCRIBE_OPTIONS") {
					t.Errorf("describeOptions = %v, %v; want an error naming the variable", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("describeOptions = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
