package deploycheck

import (
	"bytes"
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/containerd/platforms"
	"github.com/distribution/reference"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/moby/buildkit/util/suggest"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// LintDockerfile runs the rules of `docker build --check` (buildkit
// v0.34.2, offline) and returns one line per warning ("Rule (line N):
// detail"), in the order of the lines. dockerignore is the build context's
// .dockerignore (nil: none). A Dockerfile that would not build is an
// error; the warnings found before buildkit would stop come with it, as
// `docker build --check` shows them (InvalidDefaultArgInFrom, with no
// --build-arg, always comes with one).
//
// The parser and instructions packages run NoEmptyContinuation, FromAsCasing,
// StageNameCasing and MaintainerDeprecated themselves; the rules buildkit
// runs only while converting to LLB are checked here under the same
// conditions, with buildkit's own rule definitions, so the warnings read
// as docker's. Converting would compile dockerfile2llb (grpc, otel,
// containerd), a minute and a half of every cold `make test`; the lintref
// module (make lintref) holds this lint to dockerfile2llb.DockerfileLint.
//
// InvalidBaseImagePlatform compares the platform a registry returns for a
// base image with the one asked for: offline there is no registry, so it
// never fires (as with an offline resolver that answers every platform).
func LintDockerfile(name string, data, dockerignore []byte) ([]string, error) {
	var found []lintWarning
	warn := func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		found = append(found, lintWarning{rule, line, msg})
	}
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s would not build: %w", name, err)
	}
	checkOpts, _, _, _ := parser.ParseDirective("check", data)
	cfg, err := linter.ParseLintOptions(checkOpts)
	if err != nil {
		return nil, fmt.Errorf("%s would not build: the check directive: %w", name, err)
	}
	cfg.Warn = warn
	lint := linter.New(cfg)
	for _, w := range res.Warnings {
		if w.URL == linter.RuleNoEmptyContinuation.URL && w.Location != nil {
			lint.Run(&linter.RuleNoEmptyContinuation, []parser.Range{*w.Location}, linter.RuleNoEmptyContinuation.Format())
		}
	}
	l := &dockerLint{lint: lint, shlex: shell.NewLex(res.EscapeToken)}
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err == nil && len(stages) == 0 {
		err = fmt.Errorf("it has no FROM")
	}
	if err == nil {
		err = l.run(stages, metaArgs, dockerignore)
	}
	if err != nil {
		err = fmt.Errorf("%s would not build: %w", name, err)
	}
	slices.SortStableFunc(found, func(a, b lintWarning) int { return cmp.Compare(a.line, b.line) })
	warnings := make([]string, 0, len(found))
	for _, w := range found {
		warnings = append(warnings, fmt.Sprintf("%s (line %d): %s", w.rule, w.line, w.detail))
	}
	return warnings, err
}

func (l *dockerLint) run(stages []instructions.Stage, metaArgs []instructions.ArgCommand, dockerignore []byte) error {
	if len(dockerignore) > 0 {
		patterns, err := ignorefile.ReadAll(bytes.NewReader(dockerignore))
		if err != nil {
			return fmt.Errorf(".dockerignore: %w", err)
		}
		if len(patterns) > 0 {
			if l.ignore, err = patternmatcher.New(patterns); err != nil {
				return fmt.Errorf(".dockerignore: %w", err)
			}
		}
	}
	checkStageNames(stages, l.lint)
	checkCasing(stages, l.lint)
	if err := l.fromLines(stages, metaArgs); err != nil {
		return err
	}
	return l.dispatch(stages)
}

type lintWarning struct {
	rule   string
	line   int
	detail string
}

// dockerLint is one run over a Dockerfile's stages, in buildkit's order.
type dockerLint struct {
	lint   *linter.Linter
	shlex  *shell.Lex
	ignore *patternmatcher.PatternMatcher // nil: no .dockerignore
	global *envList                       // the global ARGs after the meta ARGs
	// fromArgs are the names a FROM may use: the predefined platform
	// ARGs and every global ARG.
	fromArgs map[string]struct{}
}

// checkStageNames: ReservedStageName and DuplicateStageName.
func checkStageNames(stages []instructions.Stage, lint *linter.Linter) {
	seen := map[string]bool{}
	for _, st := range stages {
		if st.Name == "" {
			continue
		}
		if st.Name == "context" || st.Name == "scratch" {
			lint.Run(&linter.RuleReservedStageName, st.Location, linter.RuleReservedStageName.Format(st.Name))
		}
		if seen[st.Name] {
			lint.Run(&linter.RuleDuplicateStageName, st.Location, linter.RuleDuplicateStageName.Format(st.Name))
		}
		seen[st.Name] = true
	}
}

// checkCasing: ConsistentInstructionCasing against the majority casing of
// the self-consistent (all upper or all lower) instruction names.
func checkCasing(stages []instructions.Stage, lint *linter.Linter) {
	lower, upper := 0, 0
	count := func(s string) {
		switch s {
		case strings.ToLower(s):
			lower++
		case strings.ToUpper(s):
			upper++
		}
	}
	for _, st := range stages {
		count(st.OrigCmd)
		for _, c := range st.Commands {
			count(c.Name())
		}
	}
	check := func(s string, loc []parser.Range) {
		want := ""
		if lower > upper && strings.ToLower(s) != s {
			want = "lowercase"
		} else if lower <= upper && strings.ToUpper(s) != s {
			want = "uppercase"
		}
		if want != "" {
			lint.Run(&linter.RuleConsistentInstructionCasing, loc, linter.RuleConsistentInstructionCasing.Format(s, want))
		}
	}
	for _, st := range stages {
		check(st.OrigCmd, st.Location)
		for _, c := range st.Commands {
			check(c.Name(), c.Location())
		}
	}
}

// predefinedArgs are the global ARGs buildkit defines before the first
// FROM, for a build on this machine's platform without --platform.
func predefinedArgs(target string) *envList {
	p := platforms.DefaultSpec()
	if target == "" {
		target = "default"
	}
	env := &envList{}
	for _, kv := range [...][2]string{
		{"BUILDPLATFORM", platforms.Format(p)}, {"BUILDOS", p.OS}, {"BUILDOSVERSION", p.OSVersion},
		{"BUILDARCH", p.Architecture}, {"BUILDVARIANT", p.Variant},
		{"TARGETPLATFORM", platforms.FormatAll(p)}, {"TARGETOS", p.OS}, {"TARGETOSVERSION", p.OSVersion},
		{"TARGETARCH", p.Architecture}, {"TARGETVARIANT", p.Variant}, {"TARGETSTAGE", target},
	} {
		env.set(kv[0], kv[1])
	}
	return env
}

// metaArgs applies the ARGs before the first FROM to env, as a build with
// no --build-arg does.
func (l *dockerLint) metaArgs(env *envList, metaArgs []instructions.ArgCommand) error {
	for _, c := range metaArgs {
		for _, kv := range c.Args {
			if kv.Value == nil {
				continue
			}
			v, _, err := l.shlex.ProcessWord(*kv.Value, env)
			if err != nil {
				return parser.WithLocation(err, c.Location())
			}
			env.set(kv.Key, v)
		}
	}
	return nil
}

// fromLines: InvalidDefaultArgInFrom, UndefinedArgInFrom,
// RedundantTargetPlatform and FromPlatformFlagConstDisallowed.
func (l *dockerLint) fromLines(stages []instructions.Stage, metaArgs []instructions.ArgCommand) error {
	target := stages[len(stages)-1].Name
	defaults := predefinedArgs(target)
	if err := l.metaArgs(defaults, metaArgs); err != nil {
		return err
	}
	for _, st := range stages {
		m, err := l.shlex.ProcessWordWithMatches(st.BaseName, defaults)
		if err != nil {
			break
		}
		if _, err := reference.ParseNormalizedNamed(m.Result); err != nil {
			l.lint.Run(&linter.RuleInvalidDefaultArgInFrom, st.Location, linter.RuleInvalidDefaultArgInFrom.Format(st.BaseName))
		}
	}
	l.global = defaults
	l.fromArgs = map[string]struct{}{}
	for _, k := range defaults.Keys() {
		l.fromArgs[k] = struct{}{}
	}
	for _, c := range metaArgs {
		for _, kv := range c.Args {
			l.fromArgs[kv.Key] = struct{}{}
		}
	}
	// A base that is no earlier stage and no image name fails only once
	// every FROM has been read, so the later FROMs' warnings come first.
	var badBase error
	names := map[string]bool{}
	file := l.lint
	defer func() { l.lint = file }()
	for _, st := range stages {
		// A "# check=..." comment right above a FROM applies to its line.
		l.lint = file.WithMergedConfigFromComments(st.Comments)
		m, err := l.shlex.ProcessWordWithMatches(st.BaseName, l.global)
		l.undefinedInFrom(m.Unmatched, st.Location)
		if err != nil {
			return parser.WithLocation(err, st.Location)
		}
		if m.Result == "" {
			return parser.WithLocation(fmt.Errorf("base name (%s) should not be blank", st.BaseName), st.Location)
		}
		if _, err := reference.ParseNormalizedNamed(m.Result); err != nil && !names[m.Result] && m.Result != "scratch" && badBase == nil {
			badBase = parser.WithLocation(fmt.Errorf("failed to parse stage name %q: %w", m.Result, err), st.Location)
		}
		if st.Name != "" {
			names[strings.ToLower(st.Name)] = true
		}
		if st.Platform == "" {
			continue
		}
		p, err := l.shlex.ProcessWordWithMatches(st.Platform, l.global)
		l.undefinedInFrom(p.Unmatched, st.Location)
		if len(p.Matched) == 1 && len(p.Unmatched) == 0 {
			if _, ok := p.Matched["TARGETPLATFORM"]; ok {
				if v, _ := l.global.Get("TARGETPLATFORM"); v == p.Result {
					l.lint.Run(&linter.RuleRedundantTargetPlatform, st.Location, linter.RuleRedundantTargetPlatform.Format(st.Platform))
				}
			}
		}
		if len(p.Matched) == 0 && len(p.Unmatched) == 0 {
			if c, err := platforms.Parse(p.Result); err == nil && !strings.Contains(st.Name, c.OS) && !strings.Contains(st.Name, c.Architecture) {
				l.lint.Run(&linter.RuleFromPlatformFlagConstDisallowed, st.Location, linter.RuleFromPlatformFlagConstDisallowed.Format(p.Result))
			}
		}
		if err != nil {
			return parser.WithLocation(fmt.Errorf("failed to process arguments for platform %s: %w", p.Result, err), st.Location)
		}
		if p.Result == "" {
			return parser.WithLocation(fmt.Errorf("empty platform value from expression %s", st.Platform), st.Location)
		}
		if _, err := platforms.Parse(p.Result); err != nil {
			return parser.WithLocation(fmt.Errorf("failed to parse platform %s: %w", st.Platform, err), st.Location)
		}
	}
	return badBase
}

func (l *dockerLint) undefinedInFrom(unmatched map[string]struct{}, loc []parser.Range) {
	keys := make([]string, 0, len(l.fromArgs))
	for k := range l.fromArgs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, arg := range sortedKeys(unmatched) {
		if _, ok := l.fromArgs[arg]; ok {
			continue
		}
		s, _ := suggest.Search(arg, keys, true)
		l.lint.Run(&linter.RuleUndefinedArgInFrom, loc, linter.RuleUndefinedArgInFrom.Format(arg, s))
	}
}

// undefinedVars: UndefinedVar for each name a word used that is neither in
// env nor a declared ARG of the stage.
func (l *dockerLint) undefinedVars(unmatched map[string]struct{}, declared map[string]struct{}, env *envList, loc []parser.Range) {
	for _, v := range sortedKeys(unmatched) {
		if _, ok := declared[v]; ok {
			continue
		}
		if v == "BUILDKIT_SBOM_SCAN_CONTEXT" || v == "BUILDKIT_SBOM_SCAN_STAGE" {
			continue
		}
		s, _ := suggest.Search(v, env.Keys(), runtime.GOOS != "windows")
		l.lint.Run(&linter.RuleUndefinedVar, loc, linter.RuleUndefinedVar.Format(v, s))
	}
}

func sortedKeys(m map[string]struct{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// envList is a stage's environment (ENV, ARG, the base's) in the order
// the names were first set; it is the shell.EnvGetter words expand with.
type envList struct {
	keys []string
	vals map[string]string
}

func (e *envList) set(k, v string) {
	if e.vals == nil {
		e.vals = map[string]string{}
	}
	if _, ok := e.vals[k]; !ok {
		e.keys = append(e.keys, k)
	}
	e.vals[k] = v
}

func (e *envList) Get(k string) (string, bool) { v, ok := e.vals[k]; return v, ok }
func (e *envList) Keys() []string              { return slices.Clone(e.keys) }

func (e *envList) clone() *envList {
	c := &envList{}
	for _, k := range e.keys {
		c.set(k, e.vals[k])
	}
	return c
}
