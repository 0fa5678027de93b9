package engine

// SamplingDefaults are the generation settings a model folder recommends
// (genai_config.json's "search", generation_config.json). A zero field
// means the folder said nothing about it. The engine fills a Request's
// unset fields from them (see Engine.Stream) and names what it filled in
// Result.ModelDefaults.
type SamplingDefaults struct {
	// DoSample says the model is meant to be sampled: a request without a
	// temperature then samples with Temperature (1 when the folder gives
	// none), TopK and TopP. When false, the folder's temperature, top_k
	// and top_p are not used and a request decodes greedily unless it
	// sets a temperature itself.
	DoSample bool
	// Temperature, TopK and TopP are the sampling settings, used only
	// with DoSample.
	Temperature float64
	TopK        int
	TopP        float64
	// RepetitionPenalty applies whether or not the model is sampled (as
	// in Hugging Face transformers); 1 is off.
	RepetitionPenalty float64
	// MaxLength caps prompt plus generated tokens when a request gives no
	// max_tokens and the engine has no default of its own.
	MaxLength int
}

// validate checks the defaults against the ranges a Request accepts, so a
// folder cannot slip in what a caller could not ask for.
func (d SamplingDefaults) validate() error {
	r := Request{PromptIDs: []int32{0}, Temperature: d.Temperature, TopK: d.TopK, TopP: d.TopP,
		RepetitionPenalty: d.RepetitionPenalty, MaxTokens: d.MaxLength}
	return r.Validate()
}

// apply fills the fields req leaves unset (zero) from d and returns the
// request's names of the fields it filled. max_tokens is handled by the
// caller, which knows the prompt length.
func (d SamplingDefaults) apply(req *Request) []string {
	var filled []string
	if d.DoSample {
		if req.Temperature == 0 {
			req.Temperature = d.Temperature
			if req.Temperature == 0 {
				req.Temperature = 1
			}
			filled = append(filled, "temperature")
		}
		if req.TopK == 0 && d.TopK > 0 {
			req.TopK = d.TopK
			filled = append(filled, "top_k")
		}
		if req.TopP == 0 && d.TopP > 0 && d.TopP < 1 {
			req.TopP = d.TopP
			filled = append(filled, "top_p")
		}
	}
	if req.RepetitionPenalty == 0 && d.RepetitionPenalty > 0 && d.RepetitionPenalty != 1 {
		req.RepetitionPenalty = d.RepetitionPenalty
		filled = append(filled, "repetition_penalty")
	}
	return filled
}
