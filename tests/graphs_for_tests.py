"""Small graphs the engine tests share."""

REVIEW_LOOP = """
name: review-loop
description: A writer and a reviewer that sends work back.
inputs:
  type: object
  properties:
    topic: { type: string }
  required: [topic]
limits: { max_steps: 20, max_visits: 4 }
roles:
  writer:
    description: Writes a draft
    goal: You write.
    frontmatter:
      oneOf:
        - properties:
            $status: { const: drafted }
            draft: { type: string }
            notes: { type: string }
          required: [$status, draft]
        - properties:
            $status: { const: stuck }
            question: { type: string }
          required: [$status, question]
  reviewer:
    description: Reviews a draft
    goal: You review.
    max_repairs: 1
    frontmatter:
      type: object
      properties:
        $status: { enum: [approved, rejected] }
        comments: { type: string }
        tags: { type: array, items: { type: string } }
      required: [$status, comments]
graph:
  $START:
    _: { role: writer, prompt: "Write about {{{$inputs.topic}}} (thread {{{$thread.id}}})." }
    resume: { role: writer, prompt: "Continue: {{{$inputs.message}}}" }
  writer:
    drafted: { role: reviewer, prompt: "Review this draft: {{{draft}}}{{#notes}} (notes: {{{notes}}}){{/notes}}" }
    stuck: { role: $END, prompt: "Stopped: {{{question}}}" }
  reviewer:
    approved: { role: $END, prompt: "Approved: {{{$steps.writer.draft}}} / {{{comments}}} / {{{tags}}}" }
    rejected: { role: writer, prompt: "Fix: {{{comments}}}. Your last draft: {{{$steps.writer.draft}}}" }
"""
