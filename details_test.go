package loom_test

import (
	"github.com/agentloom/loom/codemode"
	"reflect"
	"strings"
	"testing"

	"github.com/agentloom/loom/agent"
	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/job"
	"github.com/agentloom/loom/schedule"
	"github.com/agentloom/loom/tool"
)

// detailsTypes are the Details every tool of the module returns.
var detailsTypes = []any{
	tool.ReadDetails{}, tool.ImageDetails{}, tool.WriteDetails{}, tool.EditDetails{}, tool.StaleDetails{},
	tool.GrepDetails{}, tool.WorkdirDetails{}, tool.ArgErrorDetails{}, tool.NotHeldDetails{}, tool.PanicDetails{},
	job.BashDetails{}, job.PollDetails{}, job.ListDetails{}, job.RefusalDetails{},
	agent.SpawnDetails{}, agent.SendDetails{}, agent.WaitDetails{}, agent.NoteDetails{}, agent.NotesDetails{},
	agent.RosterDetails{}, agent.TodoDetails{}, agent.RefusalDetails{},
	history.SearchDetails{}, history.RememberDetails{},
	codemode.Details{}, codemode.ExecutionDetails{},
	schedule.CreateDetails{}, schedule.ListDetails{}, schedule.Cancelled{}, schedule.RefusalDetails{},
}

// TestDetailsAreSnakeCase: every field a program reads in Details, at
// any depth, has a snake_case JSON name.
func TestDetailsAreSnakeCase(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() == "time" {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case f.Anonymous && name == "":
				walk(path, f.Type)
				continue
			case !snakeCase.MatchString(name):
				t.Errorf("%s.%s (%s) has JSON name %q, not snake_case", path, f.Name, ty, name)
			}
			walk(path+"."+name, f.Type)
		}
	}
	for _, d := range detailsTypes {
		ty := reflect.TypeOf(d)
		walk(ty.String(), ty)
	}
}
