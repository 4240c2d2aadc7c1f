"""The public model zoo: architectures people train, from
transformers, torchvision and timm, built at tiny sizes from their configs
(random weights, no downloads), each with an example batch and its loss.

Each entry is a function returning (module, inputs, labels, loss): the module
takes the inputs and returns logits, `loss(logits, labels)` is what training
minimizes (cross-entropy over the tokens or the classes)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, SEQUENCE, BATCH = 96, 16, 2
# Dropout off: zcc's random bits are its own, so a comparison with
# PyTorch's training runs without it (dropout itself is tested apart). The
# key-value cache off, as in training.
NO_DROPOUT = dict(attention_dropout=0.0, use_cache=False)
CLASSES, IMAGE, IMAGES = 10, 32, 8


class Logits(nn.Module):
    """A transformers model's logits, flattened to [tokens, classes] for a
    language model."""

    def __init__(self, model, tokens):
        super().__init__()
        self.model = model
        self.tokens = tokens

    def forward(self, x, attention_mask=None):
        if attention_mask is None:
            logits = self.model(x).logits
        else:
            logits = self.model(x, attention_mask=attention_mask).logits
        return logits.flatten(0, 1) if self.tokens else logits


def _text(model):
    torch.manual_seed(1)
    ids = torch.randint(0, VOCAB, (BATCH, SEQUENCE))
    labels = torch.randint(0, VOCAB, (BATCH * SEQUENCE,))
    return Logits(model, True), (ids,), (labels,), F.cross_entropy


def _image(model, wrap=True):
    torch.manual_seed(1)
    images = torch.randn(IMAGES, 3, IMAGE, IMAGE)
    labels = torch.randint(0, CLASSES, (IMAGES,))
    module = Logits(model, False) if wrap else model
    return module, (images,), (labels,), F.cross_entropy


def _decoder(config_class, **extra):
    import transformers
    config = config_class(vocab_size=VOCAB, hidden_size=32,
                          intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, max_position_embeddings=64,
                          **NO_DROPOUT, **extra)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    return _text(model)


def gpt2(attention):
    import transformers
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=64,
                                     n_embd=32, n_layer=2, n_head=4,
                                     attn_pdrop=0.0, resid_pdrop=0.0,
                                     embd_pdrop=0.0, use_cache=False,
                                     bos_token_id=0, eos_token_id=0,
                                     attn_implementation=attention)
    torch.manual_seed(0)
    return _text(transformers.GPT2LMHeadModel(config))


def llama():
    import transformers
    return _decoder(transformers.LlamaConfig, num_key_value_heads=2)


def qwen2():
    import transformers
    return _decoder(transformers.Qwen2Config, num_key_value_heads=2)


def mistral():
    import transformers
    return _decoder(transformers.MistralConfig, num_key_value_heads=2)


def gpt_neox():
    import transformers
    return _decoder(transformers.GPTNeoXConfig)


def _encoder(config_class, model_class):
    """A BERT-style masked language model, dropout off."""
    config = config_class(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=64,
                          max_position_embeddings=64, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    return _text(model_class(config))


def bert():
    import transformers
    return _encoder(transformers.BertConfig, transformers.BertForMaskedLM)


def roberta():
    import transformers
    return _encoder(transformers.RobertaConfig, transformers.RobertaForMaskedLM)


def vit():
    import transformers
    config = transformers.ViTConfig(image_size=IMAGE, patch_size=8,
                                    hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=4,
                                    intermediate_size=64, num_labels=CLASSES,
                                    hidden_dropout_prob=0.0,
                                    attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    return _image(transformers.ViTForImageClassification(config))


def timm_vit():
    import timm
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False,
                              img_size=IMAGE, patch_size=8, depth=2,
                              num_classes=CLASSES)
    return _image(model, wrap=False)


def resnet18():
    import torchvision
    torch.manual_seed(0)
    return _image(torchvision.models.resnet18(num_classes=CLASSES), wrap=False)


def mobilenet_v3_small():
    import torchvision
    torch.manual_seed(0)
    return _image(torchvision.models.mobilenet_v3_small(num_classes=CLASSES,
                                                        dropout=0.0),
                  wrap=False)


def squeezenet():
    import torchvision
    torch.manual_seed(0)
    return _image(torchvision.models.squeezenet1_1(num_classes=CLASSES,
                                                   dropout=0.0), wrap=False)


def densenet():
    # DenseNet-121's structure at a tiny size: 4 blocks of 2 layers.
    import torchvision
    torch.manual_seed(0)
    return _image(torchvision.models.DenseNet(growth_rate=8,
                                              block_config=(2, 2, 2, 2),
                                              num_init_features=16,
                                              num_classes=CLASSES), wrap=False)


def shufflenet():
    import torchvision
    torch.manual_seed(0)
    return _image(torchvision.models.shufflenet_v2_x0_5(num_classes=CLASSES),
                  wrap=False)


def efficientnet():
    # Stochastic depth off with dropout (a draw of zcc's own; it imports,
    # test_torch_import.py's stochastic depth test checks its draws).
    import torchvision
    torch.manual_seed(0)
    return _image(torchvision.models.efficientnet_b0(
        num_classes=CLASSES, dropout=0.0, stochastic_depth_prob=0.0),
        wrap=False)


def gemma():
    import transformers
    return _decoder(transformers.GemmaConfig, num_key_value_heads=2,
                    head_dim=8)


def distilbert():
    import transformers
    config = transformers.DistilBertConfig(vocab_size=VOCAB, dim=32,
                                           n_layers=2, n_heads=4,
                                           hidden_dim=64,
                                           max_position_embeddings=64,
                                           dropout=0.0, attention_dropout=0.0)
    torch.manual_seed(0)
    return _text(transformers.DistilBertForMaskedLM(config))


def convnext():
    # ConvNeXt-T's structure at a tiny width: depthwise 7x7 convolutions,
    # LayerNorm over channels, layer scale; stochastic depth off.
    import torchvision
    from torchvision.models.convnext import CNBlockConfig
    torch.manual_seed(0)
    blocks = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)]
    return _image(torchvision.models.ConvNeXt(blocks, num_classes=CLASSES),
                  wrap=False)


def swin():
    # Swin-T's structure at a tiny size: shifted windows (torch.roll), their
    # attention masks built with new_zeros and slice assignments, relative
    # position biases (a gather), patch merging (strided slices); stochastic
    # depth off.
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
        window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=CLASSES)
    return _image(model, wrap=False)


def bloom():
    # ALiBi: attention biases by distance, added through baddbmm.
    import transformers
    config = transformers.BloomConfig(vocab_size=VOCAB, hidden_size=32,
                                      n_layer=2, n_head=4, use_cache=False,
                                      hidden_dropout=0.0, attention_dropout=0.0)
    torch.manual_seed(0)
    return _text(transformers.BloomForCausalLM(config))


def funnel():
    # Funnel Transformer (pooled sequences, relative attention built in
    # place on views): not imported yet.
    import transformers
    config = transformers.FunnelConfig(vocab_size=VOCAB, d_model=32, n_head=4,
                                       d_head=8, d_inner=64, block_sizes=[1, 1],
                                       hidden_dropout=0.0, attention_dropout=0.0,
                                       activation_dropout=0.0)
    torch.manual_seed(0)
    return _text(transformers.FunnelForMaskedLM(config))


def padded(name):
    """A text model's batch as a data loader pads it: the first sequence
    padded on the right (3 tokens), the second on the left (5 tokens, so
    its first queries see no key under a causal mask), the `attention_mask`
    an input, and the padding's labels -100 (cross-entropy leaves them out)."""
    module, (ids,), (labels,), loss = MODELS[name]()
    mask = torch.ones_like(ids)
    mask[0, -3:] = 0
    mask[1, :5] = 0
    labels = labels.clone().view(BATCH, SEQUENCE)
    labels[mask == 0] = -100
    return module, (ids, mask), (labels.flatten(),), loss


MODELS = {
    "gpt2-sdpa": lambda: gpt2("sdpa"),
    "gpt2-eager": lambda: gpt2("eager"),
    "llama": llama,
    "qwen2": qwen2,
    "mistral": mistral,
    "gpt-neox": gpt_neox,
    "bert": bert,
    "vit": vit,
    "timm-vit-tiny": timm_vit,
    "resnet18": resnet18,
    "mobilenet-v3-small": mobilenet_v3_small,
    "squeezenet": squeezenet,
    "shufflenet-v2": shufflenet,
    "densenet": densenet,
    "roberta": roberta,
    "efficientnet-b0": efficientnet,
    "gemma": gemma,
    "distilbert": distilbert,
    "convnext": convnext,
    "swin": swin,
    "bloom": bloom,
    "funnel": funnel,
}
TEXT = ["gpt2-sdpa", "gpt2-eager", "llama", "qwen2", "mistral", "gpt-neox",
        "bert", "roberta", "gemma", "distilbert"]
# BLOOM is not among them: with left padding PyTorch's own f64 run is NaN
# (its mask, float64's minimum, becomes -inf in BLOOM's f32 softmax, and a
# fully masked row divides 0 by 0), so it is no reference there.
