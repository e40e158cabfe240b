package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// kubectlPluginName is the executable name under which kubectl runs gwretry
// as the plugin "kubectl gwretry".
const kubectlPluginName = "kubectl-gwretry"

// finishCommands adds cobra's help and completion commands now rather than
// at Execute, so that they too have examples (in --help and docs/cli.md),
// and offers the values of gwretry's enumerated flags to shell completion.
func finishCommands(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = "  gwretry help translate"
		case "completion":
			c.Example = `  source <(gwretry completion bash)
  gwretry completion zsh > "${fpath[1]}/_gwretry"
  gwretry completion fish > ~/.config/fish/completions/gwretry.fish`
			for _, sh := range c.Commands() {
				sh.Example = completionExamples[sh.Name()]
			}
		}
	}
	targets := func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		// A comma list: complete the last item, keeping those before.
		done := ""
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done = toComplete[:i+1]
		}
		var out []string
		for _, n := range append(backendNames(), "all") {
			out = append(out, done+n)
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	fixed := func(values ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
	}
	for _, c := range root.Commands() {
		complete := map[string]cobra.CompletionFunc{
			"target":       targets,
			"report":       fixed("text", "wide", "json", "none"),
			"fail-on":      fixed("none", "approximated", "unsupported"),
			"channel":      fixed("standard", "experimental"),
			"nginx-layout": fixed("full", "conf.d"),
			"context":      completeContexts,
			"namespace":    completeNamespaces,
		}
		switch c.Name() {
		case "translate":
			complete["output"] = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return []string{"yaml", "json"}, cobra.ShellCompDirectiveFilterDirs
			}
		case "matrix", "version":
			complete["output"] = fixed("text", "json")
		}
		for name, fn := range complete {
			if c.Flags().Lookup(name) != nil {
				// Only fails for a flag that does not exist or is
				// registered twice, neither of which can happen here.
				_ = c.RegisterFlagCompletionFunc(name, fn)
			}
		}
	}
}

var completionExamples = map[string]string{
	"bash":       "  source <(gwretry completion bash)\n  gwretry completion bash > /etc/bash_completion.d/gwretry",
	"zsh":        "  source <(gwretry completion zsh)\n  gwretry completion zsh > \"${fpath[1]}/_gwretry\"",
	"fish":       "  gwretry completion fish | source\n  gwretry completion fish > ~/.config/fish/completions/gwretry.fish",
	"powershell": "  gwretry completion powershell | Out-String | Invoke-Expression",
}
