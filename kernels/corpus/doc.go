// Package corpus generates the workload corpus that tuning and the
// datasets are built from (issue 13, metaschedule-reference.md §4.2): the
// layers of real networks (ResNet-18/50, ResNeXt-50, MobileNet-V2,
// DenseNet-121, VGG-16, Inception-V3, 3-D ResNet-18, DCGAN, BERT
// tiny/medium/base/large, GPT-2, ViT) as kernels/workload specs, at the
// batch sizes and resolutions of TVM's dataset scripts, plus seeded
// perturbations of them, de-duplicated by structural hash (ir.Hash of the
// built workload) and split into train and test.
//
// The layer tables are data (data/*.json, embedded): each network names its
// source and its variables (batch, image size, sequence length, ...), and
// each layer is a workload spec whose integer fields may be expressions over
// them ("r/4", "batch*seq"). Networks reads them; Network.Rows expands one.
//
// Generate is deterministic for Options.Seed whatever the number of
// workers: the 52 benchmark shapes first (in the test split, unless
// NoBenchmarks), then every layer of the held-out network (test), then,
// with Options.FamilyFloor, that many table layers converted into each
// family that no layer table has (C1D, DIL, CAP, NRM; so that the train
// split has them too), then the other layers in a seeded order, then perturbations of random layers (a
// size scaled, another batch size, kernel size or stride, a neighbouring
// family, float16) until Count distinct workloads are reached. A workload
// whose hash was already produced is dropped, so the splits share no hash.
// Records carry the network and layer each workload came from. docs/corpus.md
// documents the tables, the perturbations and the JSON-lines format.
package corpus
