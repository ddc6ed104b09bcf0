package stages

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"dragonx/internal/dag"
)

// decodeStages decodes every stage instance with its kind, upstream stages
// first, so that a stage's evaluation context holds the outputs of the
// stages it references. A stage whose upstream failed to decode is not
// decoded (its errors would be consequences, not causes).
func (c *Config) decodeStages(decls map[string]*stageDecl) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var g dag.Graph
	edgeRange := map[[2]string]hcl.Range{}
	for name, sd := range decls {
		g.Add(name)
		for _, r := range sd.refs {
			g.Connect(r.target, name)
			if _, ok := edgeRange[[2]string{r.target, name}]; !ok {
				edgeRange[[2]string{r.target, name}] = r.rng
			}
		}
	}
	for _, cyc := range g.Cycles() {
		// Point at the reference that closes the cycle in its first stage:
		// cyc[0] depends on cyc[len-1].
		rng := edgeRange[[2]string{cyc[len(cyc)-1], cyc[0]}]
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Dependency cycle",
			Detail: fmt.Sprintf("The stages depend on each other in a cycle: %s (each stage uses an output of the one before it). A stage can only use outputs of stages that do not depend on it; remove one of these references.",
				dag.FormatCycle(prefixAll("stage.", cyc), 10)),
			Subject: rng.Ptr(),
		})
		for _, n := range cyc {
			decls[n].broken = true
		}
	}
	order, _ := g.TopoSort()

	// decoded[stage][instanceKey] is a decoded instance; stageVals[stage]
	// the stage's value in the `stage` object of evaluation contexts.
	decoded := map[string]map[string]*Instance{}
	stageVals := map[string]cty.Value{}
	base := c.stageBase
	for _, name := range order {
		sd := decls[name]
		if sd.broken || sd.kind == nil {
			continue
		}
		upstreamOK := true
		for _, r := range sd.refs {
			if decoded[r.target] == nil {
				upstreamOK = false
			}
		}
		if !upstreamOK {
			continue
		}
		// Validate output names against the decoded upstream instances.
		refsOK := true
		for _, r := range sd.refs {
			if r.output == "" {
				continue
			}
			for _, inst := range decoded[r.target] {
				if r.keyed && inst.Addr.Key != r.key {
					continue
				}
				if !hasOutput(inst.Stage, r.output) {
					refsOK = false
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Unknown stage output",
						Detail: fmt.Sprintf("%s has no output %q. Its outputs are: %s. Use one of them, or declare the output in %s.",
							inst.Addr, r.output, outputList(inst.Stage), inst.Addr),
						Subject: r.rng.Ptr(),
					})
					break
				}
			}
		}
		if !refsOK {
			continue
		}
		// The context holds only the stages this one references (each
		// built once, when it was decoded): a context of every stage so far
		// made loading quadratic in the number of stages.
		refd := map[string]cty.Value{}
		for _, r := range sd.refs {
			refd[r.target] = stageVals[r.target]
		}
		stageVal := cty.ObjectVal(refd)
		keys := []string{""}
		if sd.hasEach {
			keys = sortedValueKeys(sd.forEach)
		}
		instances := map[string]*Instance{}
		for _, key := range keys {
			addr := Addr{Name: name, Key: key, Keyed: sd.hasEach}
			ev := base.NewChild()
			ev.Variables = map[string]cty.Value{"stage": stageVal}
			if sd.hasEach {
				ev.Variables["each"] = cty.ObjectVal(map[string]cty.Value{
					"key":   cty.StringVal(key),
					"value": sd.forEach[key],
				})
			}
			var exec *ExecutorSpec
			execOK := true
			if sd.executor != nil {
				spec, d := decodeExecutor(sd.executor, ev, c.Dir)
				diags = append(diags, d...)
				exec, execOK = spec, !d.HasErrors()
			}
			dc := &DecodeContext{Eval: ev, Dir: c.Dir, Addr: addr, DeclRange: sd.declRange}
			st, d := sd.kind.Decode(sd.body, dc)
			diags = append(diags, d...)
			if d.HasErrors() || st == nil || !execOK {
				continue
			}
			inst := &Instance{Addr: addr, Kind: sd.kind, Stage: st, DeclRange: sd.declRange, Executor: exec}
			inst.Deps = instanceDeps(sd.refs, decoded, st)
			instances[key] = inst
		}
		if len(instances) == len(keys) {
			decoded[name] = instances
			stageVals[name] = stageValue(instances)
		}
		for _, key := range keys {
			if inst := instances[key]; inst != nil {
				c.byAddr[inst.Addr.String()] = inst
			}
		}
	}

	// The instance graph, in a stable execution order.
	for _, inst := range c.byAddr {
		c.Graph.Add(inst.Addr.String())
		for _, d := range inst.Deps {
			c.Graph.Connect(d.String(), inst.Addr.String())
		}
	}
	ordered, _ := c.Graph.TopoSort()
	for _, a := range ordered {
		if inst := c.byAddr[a]; inst != nil {
			c.Instances = append(c.Instances, inst)
		}
	}
	return diags
}

// instanceDeps lists the instances an instance depends on: every instance
// its references name, and every upstream stage its inputs come from.
func instanceDeps(refs []stageRef, decoded map[string]map[string]*Instance, st Stage) []Addr {
	set := map[string]Addr{}
	for _, r := range refs {
		for _, inst := range decoded[r.target] {
			if r.keyed && inst.Addr.Key != r.key {
				continue
			}
			set[inst.Addr.String()] = inst.Addr
		}
	}
	// References through dynamic keys (stage.x[each.key]) were recorded as
	// depending on every instance; inputs name the exact ones, which are a
	// subset. Keep the conservative set so the graph never misses an edge.
	for _, in := range st.Inputs() {
		if in.Ref != nil {
			set[in.Ref.Stage.String()] = in.Ref.Stage
		}
	}
	out := make([]Addr, 0, len(set))
	for _, a := range set {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// stageValue returns a decoded stage's value in the `stage` object of the
// evaluation context: {out = {OUTPUT = artifact}} for a stage without
// for_each, an object of those by instance key for one with.
func stageValue(insts map[string]*Instance) cty.Value {
	instVal := func(inst *Instance) cty.Value {
		outs := map[string]cty.Value{}
		for _, o := range inst.Stage.Outputs() {
			outs[o.Name] = ArtifactVal(OutputRef{Stage: inst.Addr, Output: o.Name})
		}
		return cty.ObjectVal(map[string]cty.Value{"out": cty.ObjectVal(outs)})
	}
	if inst, ok := insts[""]; ok && !inst.Addr.Keyed {
		return instVal(inst)
	}
	byKey := map[string]cty.Value{}
	for k, inst := range insts {
		byKey[k] = instVal(inst)
	}
	return cty.ObjectVal(byKey)
}

func hasOutput(st Stage, name string) bool {
	for _, o := range st.Outputs() {
		if o.Name == name {
			return true
		}
	}
	return false
}

func outputList(st Stage) string {
	var names []string
	for _, o := range st.Outputs() {
		names = append(names, o.Name)
	}
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}
