package tool

// FileTools returns fs_read, fs_write, fs_edit and working_directory, in
// the order a prompt's tool index should list them, without diagnostics
// (a host with a Diagnostics builds WriteTool(d) and EditTool(d)).
func FileTools() []Tool {
	return []Tool{ReadTool(), WriteTool(nil), EditTool(nil), WorkdirTool()}
}
