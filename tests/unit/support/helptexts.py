"""Fabricated llama-server --help excerpts for planner tests.

Not captured output: trimmed, hand-written texts in the layout of llama.cpp's
help, one per engine generation, carrying exactly the flags the capability
tests look for. Real captured help texts live with the probe tests.
"""

NEW_ENGINE = """\
----- common params -----
-t,    --threads N                      number of CPU threads to use during generation (default: -1)
-tb,   --threads-batch N                number of threads to use during batch and prompt processing
-c,    --ctx-size N                     size of the prompt context (default: 0, 0 = loaded from model)
-Cb,   --cpu-mask-batch M               CPU affinity mask for batch processing
-np,   --parallel N                     number of server slots (default: -1, -1 = auto)
-ot,   --override-tensor <tensor name pattern>=<buffer type>,...
                                        override tensor buffer type
-ncmoe, --n-cpu-moe N                   keep the MoE weights of the first N layers in the CPU
--jinja, --no-jinja                     whether to use jinja template engine for chat (default: enabled)
--cache-reuse N                         min chunk size to attempt reusing from the cache via KV shifting
-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')
--chat-template-file JINJA_TEMPLATE_FILE
                                        set custom jinja chat template file
-lm,   --load-mode MODE                 how to load the model: auto, mmap, mmap+mlock, mlock, none, dio
-ngl,  --gpu-layers, --n-gpu-layers N   max. number of layers to store in VRAM, either an exact number,
                                        'auto', or 'all' (default: auto)
-sm,   --split-mode {none,layer,row,tensor}
                                        how to split the model across multiple GPUs
-fit,  --fit [on|off]                   whether to adjust unset arguments to fit in device memory
-fitt, --fit-target MiB0,MiB1,...       target margin per device for --fit
--context-shift, --no-context-shift     whether to use context shift on infinite text generation
--cache-ram, -cram N                    set the maximum cache size in MiB (default: 8192)
--slot-save-path PATH                   path to save slot kv cache (default: disabled)
-ctxcp, --ctx-checkpoints, --swa-checkpoints N
--checkpoint-min-step N                 minimum spacing between checkpoints
--reasoning [on|off|auto]               use reasoning
--reasoning-budget N                    token budget for thinking
--reasoning-preserve, --no-reasoning-preserve
-kvu,  --kv-unified, -no-kvu, --no-kv-unified
--spec-type [none|ngram-mod|draft-simple|draft-mtp]
--spec-draft-n-max N                    number of tokens to draft
--spec-draft-sampling {greedy,probabilistic}
--spec-ngram-mod-n-match N
--api-key KEY                           API key to use for authentication
--api-key-file FNAME                    path to file containing API keys
"""

OLD_ENGINE = """\
----- common params -----
-t,    --threads N                      number of threads to use during generation (default: -1)
-c,    --ctx-size N                     size of the prompt context (default: 4096, 0 = loaded from model)
-np,   --parallel N                     number of parallel sequences to decode (default: 1)
-ot,   --override-tensor <tensor name pattern>=<buffer type>,...
                                        override tensor buffer type
--jinja                                 use jinja template for chat (default: disabled)
--cache-reuse N                         min chunk size to attempt reusing from the cache via KV shifting
--mlock                                 force system to keep model in RAM rather than swapping
--no-mmap                               do not memory-map model
-ngl,  --gpu-layers, --n-gpu-layers N   number of layers to store in VRAM
-sm,   --split-mode {none,layer,row}    how to split the model across multiple GPUs
--no-context-shift                      disables context shift on infinite text generation
--slot-save-path PATH                   path to save slot kv cache (default: disabled)
--api-key KEY                           API key to use for authentication
"""
