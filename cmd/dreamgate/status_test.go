package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Any answer of GET /models but a 2xx fails the check: a wrong baseURL
// answering 404 is not a usable model, and a 401 whose body go-openai
// cannot read is named as refused credentials.
func TestStatusFailsOnANon2xxModelList(t *testing.T) {
	h := newHarness(t)
	h.set("llm.baseURL", h.llm.URL()+"/nope")
	r := h.runArgs("--config", h.cfgPath, "status")
	if r.code != 1 || !strings.Contains(r.stdout, "HTTP 404") {
		t.Errorf("status with a baseURL answering 404: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"string"}`))
	}))
	t.Cleanup(refuse.Close)
	h.set("llm.baseURL", refuse.URL+"/v1")
	r = h.runArgs("--config", h.cfgPath, "status")
	if r.code != 1 || !strings.Contains(r.stdout, "refused the API key (HTTP 401)") || strings.Contains(r.stdout, "mid-stream") {
		t.Errorf("status with a 401 {\"error\":\"string\"}: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
