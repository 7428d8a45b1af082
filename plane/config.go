package plane

import (
	"maps"
	"slices"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/blob"
	"github.com/agentloom/loom/broker"
	"github.com/agentloom/loom/codemode"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/lsp"
	"github.com/agentloom/loom/mcpclient"
	"github.com/agentloom/loom/sandbox"
	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/toolchain"
)

// Family is a set of tool families, or'ed together.
type Family uint

// The tool families New can register, in the order it registers them.
const (
	// FamilyFiles is fs_read, fs_write, fs_edit and working_directory.
	FamilyFiles Family = 1 << iota
	// FamilyGrep is grep.
	FamilyGrep
	// FamilyShell is bash and the job tools job_poll, job_kill and
	// job_send, and the job:// namespace of fs_read when FamilyFiles is in.
	FamilyShell
	// FamilyHistory is history_search and remember.
	FamilyHistory
	// FamilyAgents is agent_spawn, agent_send, agent_wait, agent_note,
	// agent_notes, agent_roster and todo; todo alone when the host brings
	// neither a Runner nor an Agency (no spawn is offered that could not
	// run).
	FamilyAgents
	// FamilyCodeMode is code_mode, and the cap:// namespace of fs_read
	// when FamilyFiles is in. Its programs reach the tools of the other
	// families through the registry's holds (codemode's package doc lists
	// which tool authorizes which capability).
	FamilyCodeMode
	// FamilyHost is advise, context_remaining, propose and the schedule
	// tools (schedule_create, schedule_list, schedule_cancel), each
	// registered when the Config brings its seam (Advice, Gauge,
	// Proposals, Schedules), after FamilyAgents and before code_mode. It is opt-in:
	// AllFamilies leaves it out, so a host names it
	// (AllFamilies|FamilyHost), and the default plane's description stays
	// within its budget.
	FamilyHost

	// AllFamilies is every family a zero Config.Families means: all but
	// the opt-in FamilyHost.
	AllFamilies = FamilyFiles | FamilyGrep | FamilyShell | FamilyHistory | FamilyAgents | FamilyCodeMode
)

// Has reports whether f includes every family of g.
func (f Family) Has(g Family) bool { return f&g == g }

// DefaultStrand is the root strand's name when Config.Strand is empty.
const DefaultStrand = "main"

// defaultPath is the PATH of DefaultEnv; its last entry is where the Go
// release tarball installs go, so a command can run the toolchain.
const defaultPath = toolchain.DefaultPath

// The directories, under the user cache directory (os.UserCacheDir), where
// New keeps what the plane stores when the Config names no place.
const (
	// ScratchParent holds one fresh session scratch directory per plane,
	// removed by Close.
	ScratchParent = "loom/scratch"
	// HistoryParent holds one history index per workspace, named
	// "workspace-<16 hex>.sqlite" after the first 16 hex characters of
	// the SHA-256 of the resolved workspace path, so later sessions in
	// the same workspace find what earlier ones wrote.
	HistoryParent = "loom/history"
)

// A history file's name: historyFilePrefix, the first
// historyDigestChars hex characters of the workspace's digest, and
// historyFileSuffix.
const (
	historyFilePrefix  = "workspace-"
	historyFileSuffix  = ".sqlite"
	historyDigestChars = 16
)

// Config configures New. It is passed by value and its zero value works
// once Workspace is set: every other field left zero takes the default it
// documents.
type Config struct {
	// Workspace is the root of the model's workspace: required. A
	// relative path is taken from the current directory; the path is
	// resolved (links included) and must be a directory.
	Workspace string
	// Strand is the root strand's name, the Strand of the session's Call.
	// Empty means DefaultStrand.
	Strand string
	// Families selects the tool families to register. Zero means
	// AllFamilies.
	Families Family

	// Policy, when set, is handed DefaultPolicy for this session and
	// returns the session's base policy (for example the default with the
	// network on); New validates the result with sandbox.Validate. Nil
	// keeps DefaultPolicy.
	Policy func(sandbox.Policy) sandbox.Policy
	// Env is the environment commands start from (the broker still passes
	// only what the policy's EnvAllow names; DefaultPolicy allows exactly
	// Env's keys), before the toolchain profiles add theirs. Nil means
	// DefaultEnv of a private home directory in the scratch directory.
	Env map[string]string
	// Toolchains adjusts the toolchain profiles every command gets: it is
	// handed toolchain.Detect's (go, npm and pip found on the commands'
	// PATH; caches under the user cache directory; none without one) and
	// returns the ones to apply. A profile's variables are offered to
	// commands (one Env already sets keeps Env's value), its read-only
	// directories become system roots and its caches writable roots the
	// git guard leaves alone (sandbox.Policy.Unguarded). A cache in the
	// workspace or one of the plane's stores, or holding one, fails New
	// with CodeStoreInWorkspace. Nil applies the detected profiles; return
	// nil to apply none.
	Toolchains func([]toolchain.Profile) []toolchain.Profile
	// LanguageServers adjusts the language servers fs_write and fs_edit
	// ask for diagnostics after every write (package lsp): it is handed
	// lsp.Detect's (gopls when it is on the commands' PATH, in $GOBIN or
	// in $GOPATH/bin) and returns the ones to run; add pyright or
	// rust-analyzer here by configuration. Each runs jailed, started at
	// the first write of a file it owns. Nil runs the detected servers;
	// return nil to run none (the file tools then answer without
	// diagnostics). Without FamilyFiles no server runs. Pyright, say:
	//
	//	cfg.LanguageServers = func(found []lsp.Server) []lsp.Server {
	//		return append(found, lsp.Server{
	//			Name:     "pyright",
	//			Command:  []string{"pyright-langserver", "--stdio"},
	//			Files:    []lsp.FilePattern{{Pattern: "*.py", LanguageID: "python"}, {Pattern: "*.pyi", LanguageID: "python"}},
	//			Watch:    []string{"pyproject.toml", "pyrightconfig.json"},
	//			ReadOnly: []string{"/usr/lib/node_modules/pyright"}, // its package; node is under /usr
	//		})
	//	}
	LanguageServers func([]lsp.Server) []lsp.Server
	// MCPServers are Model Context Protocol servers whose tools the
	// model gets (package mcpclient; mcpclient.ParseConfig reads the
	// "mcpServers" JSON hosts share): each server's tools are registered
	// as mcp__<server>__<tool>, after the families' tools. A stdio server
	// runs jailed (the workspace read-only, no network, its own home and
	// TMPDIR in the scratch directory, unless its Grant says more); New
	// starts every server and lists its tools, at most
	// mcpclient.StartTimeout each, side by side; a server that cannot be
	// listed, and each tool left out, is said in Plane.MCPRefused and New
	// goes on. With FamilyCodeMode a program calls them too, each server
	// the package cap/mcp/<name> (codemode.Options.MCPServers), a tool only
	// when the strand may call its mcp__<server>__<tool> directly; fs_read
	// cap://mcp lists, documents and searches them. Close shuts them down.
	// Nil runs none.
	MCPServers []mcpclient.Server
	// Scratch is the session scratch directory commands see as TMPDIR
	// (tool.Call.TempDir), created if missing and kept by Close. Empty
	// means a fresh private directory under ScratchParent in the user
	// cache directory, outside the workspace, which Close removes.
	Scratch string

	// Blobs is the blob store overflowing output goes to, owned by the
	// host (Close leaves it open). Nil means the store at BlobDir.
	Blobs *blob.Store
	// BlobDir is where New opens the blob store when Blobs is nil; it
	// must lie outside the workspace. Empty means blob.DefaultRoot (in the
	// user cache directory).
	BlobDir string
	// BlobOptions bound the store New opens when Blobs is nil: the
	// store's budget (evicting the least recently used blobs no open
	// session holds) and this session's (past which a spill is refused
	// with blob.CodeSpillBudget and only its excerpts are shown). The
	// zero value is blob's default (blob.DefaultMaxBytes,
	// blob.DefaultSessionBytes).
	BlobOptions blob.Options

	// Broker runs the jailed commands of bash, the job plane and grep's
	// ripgrep engine, owned by the host (Close leaves it). Nil means a
	// broker New makes with BrokerOptions and Close closes.
	Broker *broker.Broker
	// BrokerOptions configure the broker New makes when Broker is nil;
	// the zero value is broker's default (every available layer, no
	// unconfined runs).
	BrokerOptions broker.Options

	// Jobs is the job plane behind bash's auto and background modes and
	// the job tools, owned by the host. Nil means a job.Plane over the
	// broker, made with JobOptions (its Blobs set to the plane's store
	// when left nil), which Close closes.
	Jobs job.Jobs
	// JobOptions configure the job plane New makes when Jobs is nil.
	JobOptions job.Options

	// History and Memory are the seams behind history_search and
	// remember, owned by the host. Each one left nil is served by one
	// reference index (history/sqlite) at HistoryPath, which Close
	// closes and Plane.Store exposes for indexing.
	History history.History
	Memory  history.Memory
	// HistoryPath is the reference index's file. Empty means the
	// workspace's file under HistoryParent in the user cache directory.
	// It must lie outside the workspace. Ignored when HistoryURL is set.
	HistoryPath string
	// HistoryURL, when set, serves History and Memory (those left nil)
	// from the PostgreSQL index (history/postgres) in the database at
	// this libpq URL instead of a SQLite file, so many hosts share one
	// history and one note ceiling; Plane.PostgresStore exposes it for
	// indexing. Empty means the SQLite file at HistoryPath.
	HistoryURL string
	// HistorySchema is the PostgreSQL schema of the index at HistoryURL.
	// Empty means "workspace_" and the workspace's 16 hex characters, as
	// a history file is named; hosts sharing a history whose workspaces
	// lie at different paths name one schema here.
	HistorySchema string
	// SessionOf tells history_search and remember which session a call
	// belongs to. Nil means history.StrandSession.
	SessionOf history.SessionOf

	// Agency is the seam behind the agent tools and todo, owned by the
	// host (it ties it to the registry itself). Nil means the reference
	// agent.Reference running children with Runner under AgentOptions,
	// governing the registry (agent.Reference.Govern), closed by Close.
	Agency agent.Agency
	// Runner runs one sub-agent's turn for the reference Agency: the
	// host's model loop over the child's tools, dispatching the child's
	// calls with CallFor(turn.Strand, turn.Operation). It is first called
	// once a model spawns, so it may refer to the Plane New returns. Nil
	// (with Agency nil) leaves todo as the only tool of FamilyAgents.
	Runner agent.Runner
	// AgentOptions configure the reference Agency.
	AgentOptions agent.Options

	// Advice, Gauge and Proposals are the seams behind FamilyHost's
	// advise, context_remaining and propose, owned by the host; each
	// tool is registered only when its seam is set (agent.Guard,
	// agent.ProposalQueue are references a host may take). They are
	// ignored without FamilyHost.
	Advice    agent.Advice
	Gauge     agent.Gauge
	Proposals agent.Proposals
	// Schedules is the seam behind FamilyHost's schedule tools, owned by
	// the host (package schedule/sqlite's Scheduler is the reference,
	// kept beside the history index, outside the workspace). The three
	// tools come together or not at all. Ignored without FamilyHost.
	Schedules schedule.Schedules

	// CodeMode configures code_mode's hermetic build (toolchain, cache
	// directory and bound, warm-up progress); its Broker is the plane's.
	// The warm-up (finding the toolchain, building the archives once per
	// toolchain in the cache directory) runs at the first program, or
	// when the host starts Plane.CodeMode.Warm in the background; a
	// code_mode call that arrives meanwhile waits for it.
	CodeMode codemode.BuilderOptions
	// CodeModeNotify, when set, is told when a program code_mode
	// launched ends on its own (codemode.Options.Notify), as
	// JobOptions.Notify is told of jobs.
	CodeModeNotify func(codemode.ExecutionNotice)
	// CodeModeSeams are the seams code_mode offers, the first the
	// default (codemode.Options.Seams, each offered less the packages
	// none of the plane's tools authorize). Nil means the workspace
	// seam, then, with FamilyAgents, the orchestration seam, each
	// program on one. A program that both acts on the workspace and
	// directs sub-agents runs on codemode.CombinedSeam(), which needs
	// FamilyAgents.
	CodeModeSeams []codemode.Seam

	// MaxParallel bounds how many calls of one batch the plane's
	// Dispatcher runs at once. Zero or less means DefaultMaxParallel.
	MaxParallel int
}

// DefaultEnv is the environment commands start from unless Config.Env
// says otherwise: PATH (/usr/local/bin:/usr/bin:/bin:/usr/local/go/bin,
// the last where the Go release tarball installs go), HOME (home), LANG
// (C.UTF-8) and TERM (dumb). bash adds TMPDIR itself.
func DefaultEnv(home string) map[string]string {
	return map[string]string{"PATH": defaultPath, "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb"}
}

// DefaultPolicy is the base policy a session gets unless Config.Policy
// changes it: commands read the system directories a shell needs
// (sandbox.SystemReadableRoots, as system roots, which the file tools
// never read), write the workspace and the scratch directory, never touch
// the workspace's git control files (broker.DefaultProtected), have no
// network, and receive the variables env names (sorted).
func DefaultPolicy(workspace, scratch string, env map[string]string) sandbox.Policy {
	writable := []string{workspace}
	if scratch != "" && !sandbox.Covers(workspace, scratch) {
		writable = append(writable, scratch)
	}
	return sandbox.Policy{
		SystemRoots:   sandbox.SystemReadableRoots(),
		WritableRoots: writable,
		Protected:     broker.DefaultProtected(workspace),
		Network:       sandbox.NetworkOff,
		EnvAllow:      slices.Sorted(maps.Keys(env)),
	}
}
