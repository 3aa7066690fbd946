package deploycheck

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// lintStage is what buildkit tracks of a stage while it dispatches it, as
// far as the rules need: a stage built FROM an earlier one inherits its
// environment, SHELL, declared ARGs and whether WORKDIR was set.
type lintStage struct {
	name       string
	env        *envList
	declared   map[string]struct{} // the stage's ARGs, defined or not
	shellSet   bool
	workdirSet bool
	// the previous CMD, ENTRYPOINT, HEALTHCHECK of the stage (nil: none)
	once map[string][]parser.Range
}

// defaultPath is the PATH buildkit gives a Linux image whose config has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// dispatch walks every stage's instructions (a lint builds all stages, not
// only the target's) and runs the per-instruction rules.
func (l *dockerLint) dispatch(stages []instructions.Stage) error {
	var done []*lintStage
	for _, st := range stages {
		base, _, _ := l.shlex.ProcessWord(st.BaseName, l.global)
		s := &lintStage{name: st.Name, once: map[string][]parser.Range{}}
		var parent *lintStage
		for _, d := range done {
			if d.name != "" && strings.ToLower(d.name) == base {
				parent = d
			}
		}
		if parent != nil {
			s.env, s.shellSet, s.workdirSet = parent.env.clone(), parent.shellSet, parent.workdirSet
			s.declared = cloneSet(parent.declared)
		} else {
			// The base image's config, offline, has no environment.
			s.env, s.declared = &envList{}, map[string]struct{}{}
			s.env.set("PATH", defaultPath)
		}
		for _, c := range st.Commands {
			if err := l.command(s, c); err != nil {
				return parser.WithLocation(err, c.Location())
			}
		}
		done = append(done, s)
	}
	return nil
}

func cloneSet(m map[string]struct{}) map[string]struct{} {
	c := make(map[string]struct{}, len(m))
	for k := range m {
		c[k] = struct{}{}
	}
	return c
}

func (l *dockerLint) command(s *lintStage, cmd instructions.Command) error {
	// A "# check=..." comment right above an instruction applies to it.
	file := l.lint
	l.lint = file.WithMergedConfigFromComments(cmd.Comments())
	defer func() { l.lint = file }()
	loc := cmd.Location()
	if _, isArg := cmd.(*instructions.ArgCommand); !isArg {
		if ex, ok := cmd.(instructions.SupportsSingleWordExpansion); ok {
			err := ex.Expand(func(word string) (string, error) {
				w, unmatched, err := l.shlex.ProcessWord(word, s.env)
				l.undefinedVars(unmatched, s.declared, s.env, loc)
				return w, err
			})
			if err != nil {
				return err
			}
		}
	}
	if ex, ok := cmd.(instructions.SupportsSingleWordExpansionRaw); ok {
		raw := shell.NewLex('\\')
		raw.SkipProcessQuotes = true
		err := ex.ExpandRaw(func(word string) (string, error) {
			w, unmatched, err := raw.ProcessWord(word, s.env)
			l.undefinedVars(unmatched, s.declared, s.env, loc)
			return w, err
		})
		if err != nil {
			return err
		}
	}
	switch c := cmd.(type) {
	case *instructions.EnvCommand:
		for _, kv := range c.Env {
			if kv.NoDelim {
				l.lint.Run(&linter.RuleLegacyKeyValueFormat, loc, linter.RuleLegacyKeyValueFormat.Format(c.Name()))
			}
			l.secretName("ENV", kv.Key, loc)
			s.env.set(kv.Key, kv.Value)
		}
	case *instructions.LabelCommand:
		for _, kv := range c.Labels {
			if kv.NoDelim {
				l.lint.Run(&linter.RuleLegacyKeyValueFormat, loc, linter.RuleLegacyKeyValueFormat.Format(c.Name()))
			}
		}
	case *instructions.ArgCommand:
		return l.arg(s, c)
	case *instructions.CmdCommand:
		l.usedOnce(s, c)
		l.jsonArgs(s, c, c.PrependShell)
	case *instructions.EntrypointCommand:
		l.usedOnce(s, c)
		l.jsonArgs(s, c, c.PrependShell)
	case *instructions.HealthCheckCommand:
		l.usedOnce(s, c)
	case *instructions.ShellCommand:
		s.shellSet = true
	case *instructions.WorkdirCommand:
		// Only the first WORKDIR a build sets counts: fixing it fixes the rest.
		if !s.workdirSet && !strings.HasPrefix(c.Path, "/") {
			l.lint.Run(&linter.RuleWorkdirRelativePath, loc, linter.RuleWorkdirRelativePath.Format(c.Path))
		}
		s.workdirSet = true
	case *instructions.ExposeCommand:
		return l.expose(s, c)
	case *instructions.CopyCommand:
		if c.From == "" {
			l.copyIgnored("Copy", c.SourcePaths, loc)
		}
	case *instructions.AddCommand:
		l.copyIgnored("Add", c.SourcePaths, loc)
	}
	return nil
}

// usedOnce: MultipleInstructionsDisallowed, at the instruction that the
// later one makes useless.
func (l *dockerLint) usedOnce(s *lintStage, c instructions.Command) {
	if prev, ok := s.once[c.Name()]; ok {
		l.lint.Run(&linter.RuleMultipleInstructionsDisallowed, prev, linter.RuleMultipleInstructionsDisallowed.Format(c.Name()))
	}
	s.once[c.Name()] = c.Location()
}

// jsonArgs: JSONArgsRecommended for a shell-form CMD or ENTRYPOINT, unless
// a SHELL chose the shell on purpose.
func (l *dockerLint) jsonArgs(s *lintStage, c instructions.Command, shellForm bool) {
	if shellForm && !s.shellSet {
		l.lint.Run(&linter.RuleJSONArgsRecommended, c.Location(), linter.RuleJSONArgsRecommended.Format(c.Name()))
	}
}

func (l *dockerLint) arg(s *lintStage, c *instructions.ArgCommand) error {
	for _, kv := range c.Args {
		l.secretName("ARG", kv.Key, c.Location())
		var value *string
		if kv.Value == nil {
			// An ARG without a default takes the global ARG's value.
			if v, ok := l.global.Get(kv.Key); ok {
				value = &v
			}
		} else {
			v, unmatched, err := l.shlex.ProcessWord(*kv.Value, s.env)
			l.undefinedVars(unmatched, s.declared, s.env, c.Location())
			if err != nil {
				return err
			}
			value = &v
		}
		if value != nil && kv.Key != "BUILDKIT_SBOM_SCAN_CONTEXT" && kv.Key != "BUILDKIT_SBOM_SCAN_STAGE" {
			s.env.set(kv.Key, *value)
		}
		s.declared[kv.Key] = struct{}{}
	}
	return nil
}

// expose: ExposeProtoCasing and ExposeInvalidFormat; a port buildkit
// cannot parse is an error.
func (l *dockerLint) expose(s *lintStage, c *instructions.ExposeCommand) error {
	for _, word := range c.Ports {
		ports, err := l.shlex.ProcessWords(word, s.env)
		if err != nil {
			return err
		}
		for _, raw := range ports {
			// [ip:][hostPort:]containerPort[/proto], as buildkit splits it
			parts := strings.Split(raw, ":")
			n := len(parts)
			container, hostPort, ip := parts[n-1], "", ""
			if n > 1 {
				hostPort = parts[n-2]
			}
			if n > 2 {
				ip = strings.Join(parts[:n-2], ":")
			}
			port, proto, _ := strings.Cut(container, "/")
			if port == "" {
				return fmt.Errorf("invalid port: %q: no port specified", raw)
			}
			switch strings.ToLower(proto) {
			case "", "tcp", "udp", "sctp":
			default:
				return fmt.Errorf("invalid port: %q: invalid proto: %s", raw, proto)
			}
			if proto != strings.ToLower(proto) {
				l.lint.Run(&linter.RuleExposeProtoCasing, c.Location(), linter.RuleExposeProtoCasing.Format(raw))
			}
			if ip != "" || hostPort != "" {
				l.lint.Run(&linter.RuleExposeInvalidFormat, c.Location(), linter.RuleExposeInvalidFormat.Format(raw))
			}
		}
	}
	return nil
}

// copyIgnored: CopyIgnoredFile for a build-context source .dockerignore
// excludes. Like buildkit, it says nothing when .dockerignore has
// exclusions (!pattern): a re-included file inside an excluded directory
// cannot be told apart statically.
func (l *dockerLint) copyIgnored(cmd string, sources []string, loc []parser.Range) {
	if l.ignore == nil || l.ignore.Exclusions() {
		return
	}
	for _, src := range sources {
		if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") {
			continue // a URL or a git repository, not the context
		}
		src = filepath.ToSlash(filepath.Clean(src))
		if src == "." || src == "/" {
			rootIgnored := false
			for _, p := range l.ignore.Patterns() {
				if s := p.String(); !p.Exclusion() && (s == "*" || s == "**" || s == "**/*") {
					rootIgnored = true
				}
			}
			if !rootIgnored {
				continue
			}
		}
		if ok, err := l.ignore.MatchesOrParentMatches(src); err == nil && ok {
			l.lint.Run(&linter.RuleCopyIgnoredFile, loc, linter.RuleCopyIgnoredFile.Format(cmd, src))
		}
	}
}

// secretWord and publicWord are buildkit's tests of an ARG or ENV name
// that looks like it carries a secret: a whole name or a _-separated
// first or last word, any case.
var (
	secretWord = regexp.MustCompile(`(?i)(?:_|^)(?:apikey|auth|credential|credentials|key|password|pword|passwd|secret|token)(?:_|$)`)
	publicWord = regexp.MustCompile(`(?i)(?:_|^)(?:public|file|version)(?:_|$)`)
)

// secretName: SecretsUsedInArgOrEnv.
func (l *dockerLint) secretName(instruction, key string, loc []parser.Range) {
	if secretWord.MatchString(key) && !publicWord.MatchString(key) {
		l.lint.Run(&linter.RuleSecretsUsedInArgOrEnv, loc, linter.RuleSecretsUsedInArgOrEnv.Format(instruction, key))
	}
}
