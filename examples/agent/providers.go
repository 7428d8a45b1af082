package main

import (
	"errors"
	"fmt"
)

// The providers -provider names.
const (
	ProviderAnthropic = "anthropic"
	ProviderOpenAI    = "openai"
)

// OpenAIKeyEnv names the variable holding the OpenAI API key.
const OpenAIKeyEnv = "OPENAI_API_KEY"

// errNoOpenAIKey is the refusal of an OpenAI run without an API key.
var errNoOpenAIKey = errors.New(OpenAIKeyEnv + " is not set: export your OpenAI API key (https://platform.openai.com) and run again")

// pickProvider returns the provider a run uses and its API key: the one
// named, else Anthropic when its key is set, else OpenAI when its key is
// set, else Anthropic (whose missing key the run then reports).
func pickProvider(named string, getenv func(string) string) (provider, apiKey string) {
	if named == "" {
		named = ProviderAnthropic
		if getenv(APIKeyEnv) == "" && getenv(OpenAIKeyEnv) != "" {
			named = ProviderOpenAI
		}
	}
	switch named {
	case ProviderAnthropic:
		return named, getenv(APIKeyEnv)
	case ProviderOpenAI:
		return named, getenv(OpenAIKeyEnv)
	}
	return named, ""
}

// newProvider returns the Provider cfg names, asking cfg.model or the
// provider's default model; it refuses an unknown provider and a run
// without its API key.
func newProvider(cfg config) (Provider, error) {
	switch cfg.provider {
	case ProviderAnthropic, "":
		if cfg.apiKey == "" {
			return nil, errNoKey
		}
		return NewAnthropic(cfg.apiKey, cfg.baseURL, orDefault(cfg.model, string(DefaultModel))), nil
	case ProviderOpenAI:
		if cfg.apiKey == "" {
			return nil, errNoOpenAIKey
		}
		return NewOpenAI(cfg.apiKey, cfg.baseURL, orDefault(cfg.model, DefaultOpenAIModel)), nil
	}
	return nil, fmt.Errorf("unknown provider %q: use %s or %s", cfg.provider, ProviderAnthropic, ProviderOpenAI)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
