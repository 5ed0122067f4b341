#pragma once
// Pipeline schedules as data: for one stage, the ordered list of compute and
// transfer actions of one optimizer step. The executor walks the list; the
// schedule checker (pipeline/schedule_check.hpp) proves a set of lists
// consistent and deadlock-free before anything runs. What follows the list
// (gradient reduction, clipping, the optimizer) is the trainer's, in plain
// sequence.
//
// A stage (a pipeline rank) holds `chunks` model chunks: chunk c of stage s is
// virtual stage c * P + s of the P * chunks virtual stages, in model order
// (interleaved schedules; one chunk otherwise). Activations go from virtual
// stage k to k + 1, which for the last rank's chunk c is rank 0's chunk c + 1
// (the wrap); gradients go back the same way.
//
// Executor contract (what each action means):
//  * RecvActivation / RecvGrad POST a non-blocking receive for that micro-batch
//    and chunk from the previous / next virtual stage. They come early, so the
//    transfer overlaps the compute before it.
//  * Forward / Backward first wait for their receive to complete (the first
//    virtual stage's Forward and the last one's Backward have none), then
//    compute.
//  * BackwardInput (B) is the part of Backward on the critical path: the
//    gradients of the chunk's inputs (activation and carried summaries). It
//    takes Backward's place in this contract (waits for RecvGrad, SendGrad
//    follows). BackwardWeight (W) computes the weight gradients its B left
//    for later and needs no transfer; it comes after its B. A (micro-batch,
//    chunk) has either one Backward or one B and one W.
//  * SendActivation / SendGrad POST a non-blocking send of what the Forward /
//    BackwardInput / Backward just produced. The executor waits on all sends
//    at the end.
// Per (peer, direction), sends and receives are in the same order, so they
// match even with a single tag.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wiola::pipeline {

enum class ActionKind : std::uint8_t {
  RecvActivation,
  Forward,
  SendActivation,
  RecvGrad,
  Backward,
  SendGrad,
  BackwardInput,   // B: input and summary gradients
  BackwardWeight,  // W: the deferred weight gradients
};

enum class ScheduleKind : std::uint8_t {
  GPipe,        // all forwards, then all backwards: every micro-batch held at once
  OneFOneB,     // PipeDream-flush: warm-up forwards, one-forward-one-backward, cool-down
  Interleaved,  // Megatron-LM's interleaved 1F1B over `chunks` virtual stages per rank
  ZbH1,         // zero bubble H1 (Qi et al. 2024): B/W split, 1F1B's peak memory
  ZbH2,         // zero bubble H2: B/W split, a greedy order holding up to 2P - 1 micro-batches
};

struct Action {
  ActionKind kind = ActionKind::Forward;
  int microbatch = 0;
  int chunk = 0;  // the stage's model chunk (virtual stage chunk * P + stage)
  friend bool operator==(const Action&, const Action&) = default;
};

// True for Forward, Backward, BackwardInput and BackwardWeight.
bool is_compute(ActionKind k);
// The action that receives a gradient and sends one back: Backward or BackwardInput.
bool takes_output_grad(ActionKind k);
// The action after which a (micro-batch, chunk) holds no activations and
// its weight gradients are done: Backward or BackwardWeight.
bool completes_backward(ActionKind k);

std::string_view schedule_kind_name(ScheduleKind k);   // "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2"
ScheduleKind parse_schedule_kind(std::string_view s);  // also "GPipe", "1F1B"; throws otherwise
// Schedules that split the backward into B and W.
bool splits_backward(ScheduleKind k);

// Throws, naming the flags, when `kind` cannot run on this shape: chunks >= 2
// only and always for interleaved, which also needs at least two stages and
// micro-batches per replica a multiple of the stages (as Megatron-LM).
void check_schedule_shape(ScheduleKind kind, int stages, int microbatches, int chunks);

// One stage's schedule of one optimizer step over `microbatches` micro-batches
// and `chunks` model chunks per stage. Throws when the shape is invalid
// (check_schedule_shape) or stage is out of range.
std::vector<Action> make_schedule(ScheduleKind kind, int stages, int stage, int microbatches,
                                  int chunks = 1);
// Every stage's schedule, index = stage.
std::vector<std::vector<Action>> make_schedules(ScheduleKind kind, int stages, int microbatches,
                                                int chunks = 1);
// Forwards only (evaluation): per micro-batch and chunk receive, forward,
// send, micro-batch by micro-batch through the chunks in model order.
std::vector<Action> make_forward_schedule(int stages, int stage, int microbatches,
                                          int chunks = 1);

// Forwards a stage runs before its steady phase (one more follows before its
// first backward when m allows): GPipe m; 1F1B and ZB-H1 min(P - s - 1, m);
// ZB-H2 min(2 (P - s) - 2, m); interleaved min(2 (P - s - 1) + (v - 1) P, m v)
// chunk forwards.
int warmup_forwards(ScheduleKind kind, int stages, int stage, int microbatches, int chunks = 1);

// The most (micro-batch, chunk) pairs one stage's list holds at once:
// forwarded and not yet through Backward or W.
int peak_in_flight(std::span<const Action> actions);

// Idle fraction of an ideal pipeline with equal stages and free transfers:
//   GPipe, 1F1B:          (P - 1) / (m + P - 1)
//   interleaved (v):      (P - 1) / (v m + P - 1)     (each chunk costs 1/v)
//   ZB-H1, ZB-H2:         (P - 1) / (3 m + P - 1)     (with T_F = T_B = T_W)
// ZB-H2's extra warm-up forwards only pay off when B costs more than W (then
// ZB-H1's bubble grows to (P - 1)(T_F + T_B - T_W) while ZB-H2's stays near
// (P - 1) T_F); without the paper's optimizer post-validation no schedule
// goes below (P - 1) T_F: the last stage waits that long for its first input.
double theoretical_bubble(ScheduleKind kind, int stages, int microbatches, int chunks = 1);
// A warning when the pipeline never fills (m < P) or the schedule's bubble
// exceeds 25%.
std::optional<std::string> bubble_warning(int stages, int microbatches,
                                          ScheduleKind kind = ScheduleKind::OneFOneB,
                                          int chunks = 1);

// Compact text form for logs and tests: "RA3 F3 SA3 RG3 B3 SG3", "BI3" and "W3"
// for the split backward; a non-zero chunk is appended as "F3@1".
std::string to_string(const Action& a);
std::string to_string(std::span<const Action> actions);  // space-separated
Action parse_action(std::string_view s);                 // throws on bad input
std::vector<Action> parse_actions(std::string_view s);   // whitespace-separated
// "stage 0: F0 SA0 ...\nstage 1: ..." for all stages.
std::string format_schedules(const std::vector<std::vector<Action>>& stages);

}  // namespace wiola::pipeline
