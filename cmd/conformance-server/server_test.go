package main

import (
	"io"
	"maps"
	"slices"
	"testing"
)

// names returns the tools, prompts and resources the fixture of h serves.
func names(h half) []string {
	s := newServer(newSentWriter(io.Discard), h)
	var out []string
	for n := range maps.Keys(s.ListTools()) {
		out = append(out, "tool "+n)
	}
	for n := range maps.Keys(s.ListPrompts()) {
		out = append(out, "prompt "+n)
	}
	for n := range maps.Keys(s.ListResources()) {
		out = append(out, "resource "+n)
	}
	slices.Sort(out)
	return out
}

// TestHalvesSplitEverything checks that --only modern and --only legacy
// share no name, so that a gateway can expose both unprefixed, and
// together serve what the fixture serves without the flag.
func TestHalvesSplitEverything(t *testing.T) {
	all, m, l := names(both), names(modern), names(legacy)
	for _, n := range m {
		if slices.Contains(l, n) {
			t.Errorf("%s is in both halves", n)
		}
	}
	union := slices.Sorted(slices.Values(append(slices.Clone(m), l...)))
	if !slices.Equal(union, all) {
		t.Errorf("modern + legacy = %v\nwant %v", union, all)
	}
	for _, want := range []struct {
		h    half
		name string
	}{
		{modern, "tool test_input_required_result_elicitation"},
		{modern, "tool test_tool_with_task"},
		{modern, "prompt test_input_required_result_prompt"},
		{legacy, "tool test_elicitation"},
		{legacy, "tool test_sampling"},
		{legacy, "resource test://watched-resource"},
	} {
		if got := names(want.h); !slices.Contains(got, want.name) {
			t.Errorf("half %d lacks %s: %v", want.h, want.name, got)
		}
	}
}

// TestParseHalf checks the values of --only.
func TestParseHalf(t *testing.T) {
	for in, want := range map[string]half{"": both, "modern": modern, "legacy": legacy} {
		if got, err := parseHalf(in); err != nil || got != want {
			t.Errorf("parseHalf(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseHalf("2026"); err == nil {
		t.Error(`parseHalf("2026") accepted`)
	}
}
