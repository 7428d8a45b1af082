package mcpgen

import (
	"strconv"

	"github.com/agentloom/loom/tool"
)

// The bounds of one generation.
const (
	// MaxServerNameBytes bounds a server's name.
	MaxServerNameBytes = 64
	// MaxTools bounds the tools of one server.
	MaxTools = 1024
	// MaxToolNameBytes bounds a tool's name (MCP's own bound).
	MaxToolNameBytes = 128
	// MaxSchemaBytes bounds one input or output schema as JSON.
	MaxSchemaBytes = 256 << 10
	// MaxSchemaDepth bounds how deeply one schema's JSON nests (objects
	// and arrays).
	MaxSchemaDepth = 32
	// MaxTypesPerTool bounds the named types one tool's two schemas
	// yield (structs and enums, its input and output included).
	MaxTypesPerTool = 256
	// MaxFieldsPerTool bounds the struct fields and enum constants one
	// tool's two schemas yield.
	MaxFieldsPerTool = 2048
	// MaxDocBytes bounds the text of one doc comment taken from a
	// description: a longer one is cut with an ellipsis.
	MaxDocBytes = 1024
	// MaxSourceBytes bounds the generated source.
	MaxSourceBytes = 8 << 20
)

// maxIdentBytes bounds an identifier made from a name, before the suffix
// that keeps it distinct.
const maxIdentBytes = 64

// The codes of an *Error. Each is a stable snake_case word.
const (
	// CodeServerNameInvalid: the server's name is empty, over
	// MaxServerNameBytes, not UTF-8, or holds no ASCII letter or digit to
	// name a package with.
	CodeServerNameInvalid tool.Code = "mcp_server_name_invalid"
	// CodeTooManyTools: the server lists more than MaxTools tools, more
	// than one generated package holds.
	CodeTooManyTools tool.Code = "mcp_package_too_many_tools"
	// CodeToolNameInvalid: a tool's name is empty, over MaxToolNameBytes
	// or not UTF-8; the tool is left out.
	CodeToolNameInvalid tool.Code = "mcp_tool_name_invalid"
	// CodeToolNameDuplicate: two tools share a name; every tool of that
	// name is left out (the host could not tell them apart).
	CodeToolNameDuplicate tool.Code = "mcp_tool_name_duplicate"
	// CodeSchemaInvalid: a schema is not JSON, or its root is not an
	// object schema (MCP's input and output are JSON objects); the tool
	// is left out.
	CodeSchemaInvalid tool.Code = "mcp_schema_invalid"
	// CodeSchemaTooDeep: a schema nests deeper than MaxSchemaDepth; the
	// tool is left out.
	CodeSchemaTooDeep tool.Code = "mcp_schema_too_deep"
	// CodeSchemaTooLarge: a schema is over MaxSchemaBytes, or yields more
	// than MaxTypesPerTool types or MaxFieldsPerTool fields; the tool is
	// left out.
	CodeSchemaTooLarge tool.Code = "mcp_schema_too_large"
	// CodeSourceTooLarge: the package's source would be over
	// MaxSourceBytes; nothing is generated.
	CodeSourceTooLarge tool.Code = "mcp_source_too_large"
	// CodeGeneratorFault: the generated source does not parse, a bug of
	// this package; nothing is generated.
	CodeGeneratorFault tool.Code = "mcp_generator_fault"
	// CodeArgumentsInvalid: a call's args are not {"arguments": a JSON
	// object} (DecodeArguments).
	CodeArgumentsInvalid tool.Code = "mcp_arguments_invalid"
	// CodeToolError: the tool reported that the call failed (MCP's
	// isError); the message is its text. A program's *Error carries it.
	CodeToolError tool.Code = "mcp_tool_error"
)

// Error is a refusal: of a whole server (Tool is ""), of one tool, or of
// a call's arguments.
type Error struct {
	Code    tool.Code
	Tool    string // the tool's name as the server gave it; "" for the server
	Message string
}

// Error renders "\"tool\": code: message".
func (e *Error) Error() string {
	s := string(e.Code)
	if e.Tool != "" {
		s = strconv.Quote(e.Tool) + ": " + s
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// ErrorCode returns the code (tool.CodedError).
func (e *Error) ErrorCode() string { return string(e.Code) }
