package sampler_test

import (
	"fmt"

	"github.com/weftdata/weft/sampler"
)

// A 0.3/0.7 mix of two tables, 64 samples a step, read by 4 ranks.
func Example() {
	plan, err := sampler.NewPlan(sampler.Spec{
		Seed:      2048,
		BatchSize: 64,
		Shuffle:   sampler.DefaultShuffle(),
		Components: []sampler.Component{
			{Weight: 0.3, Rows: 9412, Identity: "robotics/failed_grasps@c1"},
			{Weight: 0.7, Rows: 81006, Blocks: []int64{32768, 32768, 15470}, Identity: "robotics/nominal_grasps@c1"},
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("steps:", plan.Steps())
	for step := int64(0); step < 5; step++ {
		fmt.Println("step", step, "counts", plan.Counts(step))
	}
	batch, _ := plan.Batch(0, nil)
	slice, _ := plan.RankSlice(0, 1, 4, nil)
	fmt.Println("rank 1 of 4 reads positions 1, 5, 9, …:", slice[0] == batch[1], slice[1] == batch[5], len(slice))
	// Output:
	// steps: 1413
	// step 0 counts [19 45]
	// step 1 counts [19 45]
	// step 2 counts [20 44]
	// step 3 counts [19 45]
	// step 4 counts [19 45]
	// rank 1 of 4 reads positions 1, 5, 9, …: true true 16
}

// The run id names the batches: it ignores the world size, and proportional
// weights give the same run.
func ExamplePlan_RunID() {
	spec := sampler.Spec{Seed: 1, BatchSize: 8, Components: []sampler.Component{
		{Weight: 1, Rows: 100}, {Weight: 3, Rows: 100}}}
	a, _ := sampler.NewPlan(spec)
	spec.Components[0].Weight, spec.Components[1].Weight = 0.25, 0.75
	b, _ := sampler.NewPlan(spec)
	spec.Seed = 2
	c, _ := sampler.NewPlan(spec)
	fmt.Println(a.RunID() == b.RunID(), a.RunID() == c.RunID(), len(a.RunID()))
	// Output: true false 64
}

// A component whose share is below one sample per batch still appears, at its
// rate: weight 1 of 1,000 in batches of 4 is one sample every 250 steps.
func ExamplePlan_DrawRange() {
	plan, _ := sampler.NewPlan(sampler.Spec{BatchSize: 4, Steps: 1_000_000, Components: []sampler.Component{
		{Weight: 1, Rows: 10}, {Weight: 999, Rows: 1_000_000}}})
	_, first := plan.DrawRange(0, 399_999)
	_, later := plan.DrawRange(0, 799_999)
	fmt.Println("rare samples in steps 0-399,999:", first, "and in steps 400,000-799,999:", later-first)
	// Output: rare samples in steps 0-399,999: 1600 and in steps 400,000-799,999: 1600
}

func ExampleNewPlan_errors() {
	_, err := sampler.NewPlan(sampler.Spec{BatchSize: 64, Components: []sampler.Component{{Weight: -1, Rows: 10}}})
	fmt.Println(err)
	// Output: component 0: weight -1 is not positive and finite: invalid argument: weight
}
