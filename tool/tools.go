package tool

// FileTools returns fs_read, fs_write, fs_edit and working_directory, in
// the order a prompt's tool index should list them.
func FileTools() []Tool {
	return []Tool{ReadTool(), WriteTool(), EditTool(), WorkdirTool()}
}
