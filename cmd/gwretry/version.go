package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what gwretry version prints: the module's version and the
// build's, from the binary's own build information.
type versionInfo struct {
	Version  string `json:"version"`
	Module   string `json:"module"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildVersion reads bi (debug.ReadBuildInfo's, or nil without one): a
// binary installed with go install has its module version; one built from
// a clone is "(devel)" with the commit it was built from.
func buildVersion(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: "(devel)", Module: "github.com/gwretry/gwretry", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v versionInfo) text() string {
	s := fmt.Sprintf("gwretry %s\nmodule:   %s\n", v.Version, v.Module)
	if v.Revision != "" {
		rev := v.Revision
		if v.Modified {
			rev += " (modified)"
		}
		s += "revision: " + rev + "\n"
	}
	if v.Time != "" {
		s += "time:     " + v.Time + "\n"
	}
	return s + "go:       " + v.Go + " " + v.Platform + "\n"
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the gwretry version, module and build information",
		Long: `version prints gwretry's module version (a release installed with go install, or (devel)
for a build from a clone), the commit it was built from and when, whether the work tree had
changes, and the Go version and platform that built it.`,
		Example: `  gwretry version
  gwretry version -o json`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			bi, _ := debug.ReadBuildInfo()
			v := buildVersion(bi)
			switch output {
			case "text":
				_, err := io.WriteString(stdout, v.text())
				return err
			case "json":
				b, err := json.MarshalIndent(v, "", "  ")
				if err != nil {
					return err
				}
				_, err = stdout.Write(append(b, '\n'))
				return err
			}
			return usageErrorf("-o %q: want text or json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "format: text or json")
	return cmd
}
