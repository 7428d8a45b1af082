package loomeino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// turnFunc is one scripted conversation: given the messages so far and
// how many replies came before, it answers the next reply.
type turnFunc func(msgs []*schema.Message, n int) (*schema.Message, error)

// scripted is a ToolCallingChatModel playing one script per conversation,
// chosen by the conversation's first user message. It records the tools
// each conversation was offered.
type scripted struct {
	mu      sync.Mutex
	scripts map[string]turnFunc
	offered map[string][]string
	tools   []*schema.ToolInfo
	shared  *scripted
}

func newScripted(scripts map[string]turnFunc) *scripted {
	s := &scripted{scripts: scripts, offered: map[string][]string{}}
	s.shared = s
	return s
}

func (s *scripted) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	key, n := "", 0
	for _, m := range in {
		if m.Role == schema.User && key == "" {
			key = m.Content
		}
		if m.Role == schema.Assistant {
			n++
		}
	}
	root := s.shared
	root.mu.Lock()
	script := root.scripts[key]
	var names []string
	for _, t := range s.tools {
		names = append(names, t.Name)
	}
	root.offered[key] = names
	root.mu.Unlock()
	if script == nil {
		return nil, fmt.Errorf("no script for %q", key)
	}
	return script(in, n)
}

func (s *scripted) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := s.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{m}), nil
}

func (s *scripted) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return &scripted{tools: tools, shared: s.shared}, nil
}

// calls is an assistant reply calling tools, each given as name and
// arguments; the IDs are prefix-0, prefix-1, ...
func calls(prefix string, nameArgs ...string) *schema.Message {
	var tc []schema.ToolCall
	for i := 0; i+1 < len(nameArgs); i += 2 {
		tc = append(tc, schema.ToolCall{ID: fmt.Sprintf("%s-%d", prefix, i/2), Type: "function",
			Function: schema.FunctionCall{Name: nameArgs[i], Arguments: nameArgs[i+1]}})
	}
	return schema.AssistantMessage("", tc)
}

// resultText is the text a tool message carries, whichever way the tool
// answered.
func resultText(m *schema.Message) string {
	if m.Content != "" {
		return m.Content
	}
	var parts []string
	for _, p := range m.UserInputMultiContent {
		if p.Type == schema.ChatMessagePartTypeText {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// toolResults returns the tool messages after the last assistant message,
// by tool-call ID.
func toolResults(msgs []*schema.Message) map[string]*schema.Message {
	out := map[string]*schema.Message{}
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == schema.Tool; i-- {
		out[msgs[i].ToolCallID] = msgs[i]
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
