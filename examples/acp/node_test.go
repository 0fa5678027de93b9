package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/prism-local/prism/internal/fixtures"
)

type nodeTurn struct {
	StopReason  string `json:"stopReason"`
	Thought     string `json:"thought"`
	Message     string `json:"message"`
	ToolCalls   []struct{ Kind, Status, Title string }
	ToolUpdates []string `json:"toolUpdates"`
	Usage       []struct{ Used, Size int }
}

// TestOfficialClientSDK is the acceptance run: @agentclientprotocol/sdk's
// client drives the built agent through initialize, session/new, the model
// config option, a streamed prompt with thoughts and answer, read and
// write tool round trips with permission allowed and rejected, and a cancel.
func TestOfficialClientSDK(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		fixtures.Unavailable(t, "node: %v", err)
	}
	script := fixtures.NodeScript(t, "testdata/acp_client.mjs")
	cmd := exec.CommandContext(t.Context(), "node", script, agent.Path(t), workspace)
	cmd.Env = agentEnv(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got struct {
		ProtocolVersion int                 `json:"protocolVersion"`
		LoadSession     bool                `json:"loadSession"`
		ConfigOption    string              `json:"configOption"`
		Models          []string            `json:"models"`
		Turns           map[string]nodeTurn `json:"turns"`
		Reads           []string            `json:"reads"`
		Writes          map[string]string   `json:"writes"`
		Permissions     []struct {
			Title, Kind string
			Options     []string
		} `json:"permissions"`
		ExitCode int `json:"exitCode"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s\n%s", err, out, stderr.String())
	}
	if got.ProtocolVersion != 1 || got.LoadSession || got.ConfigOption != "model" || got.ExitCode != 0 {
		t.Errorf("handshake %+v", got)
	}
	if !reflect.DeepEqual(got.Models, []string{"reader", "rejected", "think", "writer"}) {
		t.Errorf("models offered %v", got.Models)
	}
	check := func(name, stop, thought, message, updates string) {
		t.Helper()
		turn := got.Turns[name]
		if turn.StopReason != stop || strings.TrimSpace(turn.Thought) != thought || strings.TrimSpace(turn.Message) != message ||
			strings.Join(turn.ToolUpdates, ",") != updates {
			t.Errorf("%s: %+v", name, turn)
		}
		if len(turn.Usage) != 1 || turn.Usage[0].Used <= 0 || turn.Usage[0].Size != 2048 {
			t.Errorf("%s: usage %+v", name, turn.Usage)
		}
	}
	check("think", "end_turn", "The user greets me.", "Hello from Prism!", "")
	check("read", "end_turn", "", readAnswer, "completed")
	check("write", "end_turn", "", writeAnswer, "completed")
	check("reject", "end_turn", "", rejectReply, "failed")
	check("cancel", "cancelled", "", "", "failed")
	if len(got.Reads) != 1 || got.Reads[0] != workspace+"/notes.txt" {
		t.Errorf("reads %v", got.Reads)
	}
	if len(got.Writes) != 1 || got.Writes[workspace+"/out.txt"] != newText {
		t.Errorf("writes %v: want only the allowed one", got.Writes)
	}
	if len(got.Permissions) != 3 || got.Permissions[0].Kind != "edit" || got.Permissions[0].Title != "Write "+workspace+"/out.txt" ||
		strings.Join(got.Permissions[0].Options, ",") != "allow_once,reject_once" {
		t.Errorf("permissions %+v", got.Permissions)
	}
}
