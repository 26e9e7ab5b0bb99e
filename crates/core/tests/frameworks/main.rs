//! Roles on runs written from frameworks' real call sites, each allocation with the role its
//! maker gave it: FSDP, DDP, mixed precision, CUDA graphs, Megatron, DeepSpeed, the Hugging
//! Face stack, vLLM, SGLang and RL jobs. Every run is scored whole, cut where recording
//! could have started late or a ring buffer could have wrapped, and as a state-only snapshot;
//! the stacks' files, functions and lines are the frameworks' released sources (each module
//! names its versions), and physics checks that sharded training and serving add up.

mod run;

mod deepspeed;
mod hf;
mod megatron;
mod rl;
mod sglang;
mod torch_amp;
mod torch_dist;
mod vllm;
