package elysiaapi

import (
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/elysia-go/elysia/web"
)

// feedbackBody is the body of POST /feedback/add and /feedback/remove.
type feedbackBody struct {
	UserID         string `json:"user_id"`
	ConversationID string `json:"conversation_id"`
	QueryID        string `json:"query_id"`
	Feedback       *int   `json:"feedback"`
}

// errNoFeedbackStore is the answer of the feedback routes without a
// database.
var errNoFeedbackStore = web.Error(http.StatusServiceUnavailable, "feedback needs the database; the service runs without one")

func (s *routes) feedbackAdd(c *gin.Context) {
	var body feedbackBody
	if !s.bodyUser(c, &body, func() string { return body.UserID }, nil, "user_id", "conversation_id", "query_id", "feedback") {
		return
	}
	if err := s.k.CheckIDs("conversation_id", body.ConversationID, "query_id", body.QueryID); err != nil {
		s.fail(c, err, nil)
		return
	}
	if *body.Feedback < 0 || *body.Feedback > 2 {
		s.fail(c, web.BadRequest("feedback must be 0 (negative), 1 (positive) or 2 (superpositive)"), nil)
		return
	}
	if s.k.Feedback() == nil {
		s.fail(c, errNoFeedbackStore, nil)
		return
	}
	if err := s.k.Feedback().AddFeedback(c.Request.Context(), body.UserID, body.ConversationID, body.QueryID, *body.Feedback); err != nil {
		s.fail(c, err, nil)
		return
	}
	s.writeJSON(c, http.StatusOK, ok())
}

func (s *routes) feedbackRemove(c *gin.Context) {
	var body feedbackBody
	if !s.bodyUser(c, &body, func() string { return body.UserID }, nil, "user_id", "conversation_id", "query_id") {
		return
	}
	if err := s.k.CheckIDs("conversation_id", body.ConversationID, "query_id", body.QueryID); err != nil {
		s.fail(c, err, nil)
		return
	}
	if s.k.Feedback() == nil {
		s.fail(c, errNoFeedbackStore, nil)
		return
	}
	if err := s.k.Feedback().RemoveFeedback(c.Request.Context(), body.UserID, body.ConversationID, body.QueryID); err != nil {
		s.fail(c, err, nil)
		return
	}
	s.writeJSON(c, http.StatusOK, ok())
}

// feedbackNames are Elysia's names of the ratings 0, 1 and 2.
var feedbackNames = [3]string{"negative", "positive", "superpositive"}

// feedbackMetadata serves GET /feedback/metadata/:user_id: the user's
// ratings counted in all and per day, as Elysia's feedback_metadata.
func (s *routes) feedbackMetadata(c *gin.Context) {
	byValue := map[string]int{"negative": 0, "positive": 0, "superpositive": 0}
	type day struct {
		counts [3]int
		sum    int
	}
	days := map[string]*day{}
	total := 0
	if s.k.Feedback() != nil {
		err := s.k.Feedback().EachFeedback(c.Request.Context(), c.Param("user_id"), func(rating int, at time.Time) {
			if rating < 0 || rating > 2 {
				return
			}
			total++
			byValue[feedbackNames[rating]]++
			k := at.UTC().Format(time.DateOnly)
			d := days[k]
			if d == nil {
				d = &day{}
				days[k] = d
			}
			d.counts[rating]++
			d.sum += rating
		})
		if err != nil {
			s.fail(c, err, object{kv("total_feedback", 0), kv("feedback_by_value", byValue), kv("feedback_by_date", web.EmptyObject)})
			return
		}
	}
	keys := make([]string, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	byDate := make(object, len(keys))
	for i, k := range keys {
		d := days[k]
		n := d.counts[0] + d.counts[1] + d.counts[2]
		byDate[i] = kv(k, object{kv("negative", d.counts[0]), kv("positive", d.counts[1]), kv("superpositive", d.counts[2]),
			kv("mean", float64(d.sum)/float64(n)), kv("count", n)})
	}
	s.writeJSON(c, http.StatusOK, ok(kv("total_feedback", total),
		kv("feedback_by_value", object{kv("negative", byValue["negative"]), kv("positive", byValue["positive"]), kv("superpositive", byValue["superpositive"])}),
		kv("feedback_by_date", byDate)))
}
