"""Built-in model configs, with dimensions from each model's published config.json.

Sources (Hugging Face model cards / config.json of the official checkpoints):
meta-llama/Llama-3.1-8B, -70B, -405B; mistralai/Mixtral-8x7B-v0.1; deepseek-ai/DeepSeek-V3;
Qwen/Qwen3-30B-A3B. "DeepSeek-V3-like": its MLA attention and MoE (1 shared + 256 routed
experts, 8 active, first 3 layers dense) at full size; multi-token prediction is left out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3)."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class MoE:
    experts: int
    top_k: int
    intermediate: int          # per expert
    shared_experts: int = 0
    dense_layers: int = 0      # the first layers use a dense MLP instead


@dataclass(frozen=True)
class ModelConfig:
    name: str
    display: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int          # dense MLP width
    vocab: int
    max_position: int
    moe: MoE | None = None
    mla: MLA | None = None
    tied_embeddings: bool = False
    source: str = ""
    notes: str = field(default="", compare=False)

    def to_dict(self) -> dict:
        return asdict(self)

    # -- parameter counts ---------------------------------------------------------------
    def attention_params(self) -> int:
        h, d = self.hidden, self.head_dim
        if self.mla:
            m = self.mla
            qk = m.qk_nope_head_dim + m.qk_rope_head_dim
            return (h * m.q_lora_rank + m.q_lora_rank * self.heads * qk + h * (m.kv_lora_rank + m.qk_rope_head_dim)
                    + m.kv_lora_rank * self.heads * (m.qk_nope_head_dim + m.v_head_dim)
                    + self.heads * m.v_head_dim * h + m.q_lora_rank + m.kv_lora_rank + h)
        return h * (self.heads + 2 * self.kv_heads) * d + self.heads * d * h + h

    def mlp_params(self, layer: int) -> int:
        h = self.hidden
        if self.moe and layer >= self.moe.dense_layers:
            e = self.moe
            return (e.experts + e.shared_experts) * 3 * h * e.intermediate + h * e.experts + h
        return 3 * h * self.intermediate + h

    def active_mlp_params(self, layer: int) -> int:
        h = self.hidden
        if self.moe and layer >= self.moe.dense_layers:
            e = self.moe
            return (e.top_k + e.shared_experts) * 3 * h * e.intermediate + h * e.experts + h
        return self.mlp_params(layer)

    def layer_params(self, layer: int) -> int:
        return self.attention_params() + self.mlp_params(layer)

    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2) + self.hidden

    def total_params(self) -> int:
        return self.embedding_params() + sum(self.layer_params(i) for i in range(self.layers))

    def kv_bytes_per_token(self) -> int:
        """KV-cache bytes per token per layer (BF16)."""
        if self.mla:
            return (self.mla.kv_lora_rank + self.mla.qk_rope_head_dim) * 2
        return 2 * self.kv_heads * self.head_dim * 2


HF = "Hugging Face config.json of "
MODELS: dict[str, ModelConfig] = {m.name: m for m in (
    ModelConfig("llama3.1-8b", "Llama-3.1-8B", hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128,
                intermediate=14336, vocab=128256, max_position=131072, source=HF + "meta-llama/Llama-3.1-8B"),
    ModelConfig("llama3.1-70b", "Llama-3.1-70B", hidden=8192, layers=80, heads=64, kv_heads=8, head_dim=128,
                intermediate=28672, vocab=128256, max_position=131072, source=HF + "meta-llama/Llama-3.1-70B"),
    ModelConfig("llama3.1-405b", "Llama-3.1-405B", hidden=16384, layers=126, heads=128, kv_heads=8, head_dim=128,
                intermediate=53248, vocab=128256, max_position=131072, source=HF + "meta-llama/Llama-3.1-405B"),
    ModelConfig("mixtral-8x7b", "Mixtral-8x7B", hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128,
                intermediate=14336, vocab=32000, max_position=32768, moe=MoE(experts=8, top_k=2, intermediate=14336),
                source=HF + "mistralai/Mixtral-8x7B-v0.1"),
    ModelConfig("deepseek-v3", "DeepSeek-V3-like MoE", hidden=7168, layers=61, heads=128, kv_heads=128, head_dim=128,
                intermediate=18432, vocab=129280, max_position=163840,
                moe=MoE(experts=256, top_k=8, intermediate=2048, shared_experts=1, dense_layers=3),
                mla=MLA(q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
                source=HF + "deepseek-ai/DeepSeek-V3", notes="multi-token prediction module left out"),
    ModelConfig("qwen3-30b-a3b", "Qwen3-30B-A3B", hidden=2048, layers=48, heads=32, kv_heads=4, head_dim=128,
                intermediate=6144, vocab=151936, max_position=40960,
                moe=MoE(experts=128, top_k=8, intermediate=768), source=HF + "Qwen/Qwen3-30B-A3B"),
)}
